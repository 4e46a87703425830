{#- The body of a dimension's changelog model (docs/change-feed.md): per run, what changed in
    the dimension's live rows (its state model without the tombstones) since the state's
    snapshot it recorded last, appended as `insert`, `update_before` + `update_after` and
    `delete` images. The changelog is append-only, so Iceberg's own incremental read between
    two of its snapshots is the consumer's API (export-changes --changelog); under
    write-audit-publish it is written on the run's branch and published with the state.

    Each commit stamps `lakehouse.changes-through` (snapshot=<state snapshot read>,
    checked=<the state's watermark then>, seq=<this commit's _change_seq>). The next run
    compares the state as of that snapshot with the state's head, on the keys of the changes
    loaded since that watermark only: a key whose live row changed since was touched by a
    change of such a load (the state advances its `_checked_load_id` for every key it
    compares). A compaction changes no row, a tombstone expiry no live row: nothing to
    record. When the state was rebuilt since (`lakehouse.rebuilt`, its full refresh) or the
    recorded snapshot is gone (expired; no stamp), the head is compared with the replay of
    the changelog itself, whole: exact again, at the cost of the table.
      state    the dimension state model: its ref
      changes  its checked changelog model (typed ODS changes): its ref
      key      the primary key column
      columns  the attribute columns -#}
{% macro dimension_changes(state, changes, key, columns) %}
{%- set image = dimension_image_columns(key, columns) -%}
{%- set base = changelog_base(state) -%}
{%- set touched -%}
    {{ key }} in (select {{ key }} from {{ typed_rows(changes, after=base.checked) }} where _load_id > {{ base.checked }})
{%- endset %}
with before as (
    {%- if base.relation == 'ancestor' %}
    select {{ image | join(', ') }}
    from {{ state }} version as of '{{ changes_base_branch() }}'  -- pinned at the snapshot
    where not _is_deleted and {{ touched }}
    {%- elif base.relation == 'rebuilt' %}
    -- the changelog's replay: each key's latest image, if it is a live one
    select {{ image | join(', ') }}
    from (
        select
            *,
            row_number() over (
                partition by {{ key }}
                order by _change_seq desc, _change_type != 'update_before' desc
            ) as latest
        from {{ this }}
    )
    where latest = 1 and _change_type in ('insert', 'update_after')
    {%- else %}
    select {{ image | join(', ') }} from {{ state }} where false  -- the first build
    {%- endif %}
),

after as (
    select {{ image | join(', ') }}, _is_deleted
    from {{ state }}  -- its head: the run's branch, or main
    where {{ 'false' if base.relation == 'same' else touched if base.relation == 'ancestor' else 'true' }}
),

compared as (
    select
        case
            when b.{{ key }} is null then 'insert'
            when a.{{ key }} is null or a._is_deleted then 'delete'
            else 'update'
        end as kind,
        {%- for column in image %}
        b.{{ column }} as before_{{ column }},
        a.{{ column }} as after_{{ column }},
        {%- endfor %}
        a._load_id as _change_load_id,
        a._source_lsn as _change_source_lsn
    from before as b
    full outer join after as a on b.{{ key }} = a.{{ key }}
    where
        (b.{{ key }} is null and not a._is_deleted)
        or (b.{{ key }} is not null and (a.{{ key }} is null or a._is_deleted))
        or (
            b.{{ key }} is not null and not a._is_deleted and not (
                {%- for column in image %}
                b.{{ column }} <=> a.{{ column }}{{ ' and' if not loop.last }}
                {%- endfor %}
            )
        )
),

-- one pass over the compared rows (a CTE read four times is computed four times): each row
-- becomes its images, an update two of them
images as (
    select image.*, _change_load_id, _change_source_lsn
    from compared
    lateral view explode(
        case kind
            when 'delete' then array({{ _change_image('delete', 'before', image) }})
            when 'update' then array({{ _change_image('update_before', 'before', image) }},
                                     {{ _change_image('update_after', 'after', image) }})
            else array({{ _change_image('insert', 'after', image) }})
        end
    ) images_of_the_row as image
)

select
    _change_type,
    {{ image | join(',\n    ') }},
    _change_load_id,
    _change_source_lsn,
    cast({{ base.seq }} as bigint) as _change_seq,
    cast({{ base.head }} as bigint) as _state_snapshot_id,
    current_timestamp() as _recorded_at
from images
{%- endmacro %}

{#- One image of a compared row: its change type and one side's columns, as a struct -#}
{% macro _change_image(change_type, side, image) -%}
    named_struct('_change_type', '{{ change_type }}'
        {%- for column in image %}, '{{ column }}', {{ side }}_{{ column }}{% endfor %})
{%- endmacro %}

{#- A dimension's columns as its view shows them: the image a changelog records -#}
{% macro dimension_image_columns(key, columns) %}
    {{ return([key] + columns + ['_change_op', '_source_lsn', '_source_committed_at', '_load_id', '_loaded_at']) }}
{% endmacro %}

{#- The branch of a state that holds the snapshot its changelog recorded last: inside a
    write-audit-publish run Iceberg reads the run's branch and refuses `version as of <id>`
    beside it; a branch named in the query wins. Its head is kept by snapshot expiry. -#}
{% macro changes_base_branch() %}{{ return('changes_base') }}{% endmacro %}

{% macro changes_through_key() %}{{ return('lakehouse.changes-through') }}{% endmacro %}
{% macro rebuilt_key() %}{{ return('lakehouse.rebuilt') }}{% endmacro %}

{#- What this changelog model compares, resolved once per invocation before its SQL runs:
    {head: the state's snapshot to read, snapshot: the one recorded last, checked: the state's
    watermark then, relation: same | ancestor | rebuilt | first, seq: this commit's sequence,
    head_checked: the state's watermark at the head (stamped by record_changes_through)}. -#}
{% macro changelog_base(state) %}
    {%- set known = adapter.noted_for_post_hooks(this) -%}
    {%- if known is not none -%}{{ return(known) }}{%- endif -%}
    {%- set unbuilt = {'head': 0, 'snapshot': 0, 'checked': 0, 'relation': 'first', 'seq': 1, 'head_checked': 0} -%}
    {%- if not execute or load_relation(state) is none -%}
        {{ return(unbuilt) }}  {#- parsing, or compiling before the state's first build -#}
    {%- endif -%}
    {%- do wap_session() -%}  {#- a Thrift connection: the run's branch before it renders -#}
    {%- set branch = wap_active_branch() or 'main' -%}
    {#- one call: what this changelog recorded last, and how the state's head relates to the
        state's snapshot it names; a first build or a full refresh recorded nothing -#}
    {%- if is_incremental() -%}
        {%- set call = "'sinceStamped', '" ~ this ~ "', '" ~ changes_through_key() ~ "', '" ~ state -%}
    {%- else -%}
        {%- set call = "'since', '" ~ state ~ "', '" -%}
    {%- endif -%}
    {%- set answer = run_query("select reflect('lakehouse.TableState', " ~ call ~ "', '" ~ branch ~ "', '"
        ~ rebuilt_key() ~ "') from values (1)").rows[0][0].split('\t') -%}
    {%- if not is_incremental() -%}
        {%- set answer = [''] + answer -%}
    {%- endif -%}
    {%- set recorded = {} -%}
    {%- for pair in answer[0].split(',') if '=' in pair -%}
        {%- set name, value = pair.split('=') -%}
        {%- do recorded.update({name: value | int}) -%}
    {%- endfor -%}
    {%- set since = answer[1:] -%}
    {%- set relation = since[1] -%}
    {%- if not is_incremental() -%}
        {%- set relation = 'first' -%}
    {%- elif relation == 'missing' -%}
        {%- set relation = 'rebuilt' -%}  {#- compare with the changelog's own replay -#}
    {%- endif -%}
    {%- if since[0] == 'none' -%}
        {{ exceptions.raise_compiler_error(this ~ ": its state " ~ state ~ " has no snapshot: build it first") }}
    {%- endif -%}
    {%- set checked = recorded.get('checked', 0) if relation in ['same', 'ancestor'] else 0 -%}
    {#- the state's watermark at the head: one column of it (its own run reads the same) -#}
    {%- set head_checked_sql -%}
        select coalesce(max(_checked_load_id), {{ checked }}) from {{ state }}
        where {{ 'false' if relation == 'same' else '_checked_load_id > ' ~ checked }}
    {%- endset -%}
    {%- set head_checked = run_query(head_checked_sql).columns[0].values()[0] -%}
    {%- if relation == 'ancestor' and head_checked == checked -%}
        {%- set relation = 'same' -%}  {#- no key compared since: compactions, expiries only -#}
    {%- endif -%}
    {%- if relation == 'ancestor' -%}
        {%- do run_query("select reflect('lakehouse.TableState', 'pinBranch', '" ~ state ~ "', '"
            ~ changes_base_branch() ~ "', '" ~ recorded.snapshot ~ "') from values (1)") -%}
    {%- endif -%}
    {%- set base = {
        'head': since[0] | int,
        'snapshot': recorded.get('snapshot', 0),
        'checked': checked,
        'relation': relation,
        'seq': recorded.get('seq', 0) + 1,
        'head_checked': head_checked,
    } -%}
    {{ log(this ~ ": changes of " ~ state ~ " from " ~ (base.snapshot or 'the start') ~ " to " ~ base.head ~ " (" ~ relation ~ ")", info=true) }}
    {{ return(adapter.note_for_post_hooks(this, base)) }}
{% endmacro %}

{#- Post-hook of a changelog model: it holds the changes through the state's snapshot it read.
    A record that is missing only makes the next run compare more (the rebuilt path). -#}
{% macro record_changes_through() %}
    {%- if not execute or model.resource_type != 'model' -%}{{ return('') }}{%- endif -%}
    {%- set base = adapter.noted_for_post_hooks(this) -%}
    {%- if base is none -%}{{ return('') }}{%- endif -%}
    {%- set value = 'snapshot=' ~ base.head ~ ',checked=' ~ base.head_checked ~ ',seq=' ~ base.seq -%}
    {%- do run_query("select reflect('lakehouse.SnapshotSummary', 'stamp', '" ~ this ~ "', '"
        ~ changes_through_key() ~ "', '" ~ value ~ "', '" ~ (wap_active_branch() or 'main') ~ "') from values (1)") -%}
    {{ return('') }}
{% endmacro %}

{#- Post-hook of a dimension state model: a build that is not incremental (its first, a full
    refresh) stamps `lakehouse.rebuilt`, so its changelog compares the whole state next. -#}
{% macro record_rebuild() %}
    {%- if not execute or model.resource_type != 'model' or is_incremental() -%}{{ return('') }}{%- endif -%}
    {%- do run_query("select reflect('lakehouse.SnapshotSummary', 'stamp', '" ~ this ~ "', '"
        ~ rebuilt_key() ~ "', '" ~ invocation_id ~ "', '" ~ (wap_active_branch() or 'main') ~ "') from values (1)") -%}
    {{ return('') }}
{% endmacro %}
