{#- The body of a dimension's state model: per key, the last applied change of its source
    changelog, deletes kept as tombstones (`_is_deleted`). An incremental run reads only the
    newly loaded changes (literal load-id watermark) and the touched keys' current state rows;
    for each touched key the candidate with the highest source position wins (the current
    state included), so a stale change, a re-sent one, or a zombie change older than the
    delete that tombstoned its key, loses to what the state already holds. The history of
    changes is never re-read.
    `_checked_load_id` is the highest load whose changes were compared for the key (won or
    lost): the model's watermark. It advances for deletes and stale changes too, so no load is
    merged twice. Tombstones are dropped after a retention (expire_dimension_tombstones).
      changes   the checked changelog model (typed, with reject_reason): its ref
      key       the source table's primary key: a column, or a list of them (composite)
      columns   the state's attribute columns, as the checked model names them -#}
{% macro dimension_state(changes, key, columns) %}
{%- set keys = [key] if key is string else key -%}
{%- set after = load_watermark(target_column='_checked_load_id') -%}
with new_changes as (
    select
        {{ keys | join(',\n        ') }},
        {%- for column in columns %}
        {{ column }},
        {%- endfor %}
        case op when '-D' then 'delete' when '+I' then 'insert' else 'update' end as _change_op,
        op = '-D' as _is_deleted,
        source_lsn as _source_lsn,
        kafka_offset as _source_offset,
        source_committed_at as _source_committed_at,
        _load_id,
        _loaded_at,
        _load_id as _checked_load_id,
        false as _is_current_state
    from {{ typed_rows(changes, after=after) }}  -- this run's load parsed once
    where
        reject_reason is null
        and op != '-U'  -- before-images carry no new state
        and {{ loaded_since_last_run(target_column='_checked_load_id', watermark=after) }}
),

candidates as (
    select * from new_changes
    {%- if is_incremental() %}
    union all
    -- the touched keys' current state competes with their new changes
    select
        {{ _state_columns(keys, columns) }},
        _checked_load_id,
        true as _is_current_state
    from {{ this }}
    where {{ _key_tuple(keys) }} in (select {{ _key_tuple(keys, 'new_changes.') | trim('()') }} from new_changes)
    {%- endif %}
),

ranked as (
    select
        *,
        row_number() over (
            partition by {{ keys | join(', ') }}
            -- on a tie (a change re-sent) the state already holds it: keep the state's row
            order by _source_lsn desc, _source_offset desc, _is_current_state desc
        ) as change_rank,
        max(_checked_load_id) over (partition by {{ keys | join(', ') }}) as _newest_checked_load_id
    from candidates
)

select
    {{ _state_columns(keys, columns) }},
    _newest_checked_load_id as _checked_load_id
from ranked
where change_rank = 1
{%- endmacro %}

{#- The columns a state row carries, but its watermark -#}
{% macro _state_columns(keys, columns) -%}
    {{ (keys + columns + ['_change_op', '_is_deleted', '_source_lsn', '_source_offset',
        '_source_committed_at', '_load_id', '_loaded_at']) | join(',\n        ') }}
{%- endmacro %}

{#- `a` for one key column, `(a, b)` for a composite key (Spark compares them as a struct) -#}
{% macro _key_tuple(keys, prefix='') -%}
    {%- set columns = [] -%}
    {%- for key in keys -%}{%- do columns.append(prefix ~ key) -%}{%- endfor -%}
    {{ columns[0] if columns | length == 1 else '(' ~ columns | join(', ') ~ ')' }}
{%- endmacro %}
