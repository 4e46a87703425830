{{
    config(
        unique_key='user_id',
        merge_delete_when="DBT_INTERNAL_SOURCE._change_op = 'delete'",
    )
}}

{#- Current state of the source `users` table. For every key touched by newly loaded
    changes, the change with the highest source position over the whole history wins,
    whatever order the batches arrived in; a winning delete removes the row. -#}
with changes as (
    select * from {{ ref('dwd_appdb__user_changes_checked') }}
    where
        reject_reason is null
        and op != '-U'  -- before-images carry no new state
),

touched_keys as (
    select distinct user_id from changes
    where {{ loaded_since_last_run() }}
),

ranked as (
    select
        *,
        row_number() over (
            partition by user_id order by source_lsn desc, kafka_offset desc
        ) as change_rank
    from changes
    where user_id in (select touched_keys.user_id from touched_keys)
)

select
    user_id,
    user_name,
    region,
    is_creator,
    user_level,
    registered_at,
    case op when '-D' then 'delete' when '+I' then 'insert' else 'update' end as _change_op,
    source_lsn as _source_lsn,
    source_committed_at as _source_committed_at,
    _load_id,
    _loaded_at
from ranked
where
    change_rank = 1
    -- a first build creates the table, so deleted keys must not enter it;
    -- incremental runs pass deletes on to the merge, which removes the rows
    and (op != '-D' or {{ is_incremental() }})
