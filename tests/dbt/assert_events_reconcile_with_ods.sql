-- Landed = accepted + rejected, per batch: every ODS client event is either in the
-- event detail or in the quarantine with a reason. Returns the batches that do not add up.
with landed as (
    select
        _batch_id,
        count(*) as landed_rows
    from {{ ref('ods_client__events') }}
    group by _batch_id
),

accepted as (
    select
        _batch_id,
        count(*) as accepted_rows
    from {{ ref('dwd_client__events') }}
    group by _batch_id
),

rejected as (
    select
        _batch_id,
        count(*) as rejected_rows
    from {{ ref('dwd_quarantine__rejected_records') }}
    where source_table = 'client_events'
    group by _batch_id
)

select
    landed._batch_id,
    landed.landed_rows,
    coalesce(accepted.accepted_rows, 0) as accepted_rows,
    coalesce(rejected.rejected_rows, 0) as rejected_rows
from landed
left join accepted on landed._batch_id = accepted._batch_id
left join rejected on landed._batch_id = rejected._batch_id
where landed.landed_rows != coalesce(accepted.accepted_rows, 0) + coalesce(rejected.rejected_rows, 0)
