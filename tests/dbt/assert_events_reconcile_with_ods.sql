-- Landed = accepted + rejected, per landed file: every ODS line of a client event file is
-- either in the event detail or in the quarantine with a reason, once. Returns the files
-- that do not add up. (ODS itself is reconciled with the landing files by the Python tests.)
with landed as (
    select
        _source_file,
        count(*) as landed_rows
    from {{ ref('ods_client__events') }}
    group by _source_file
),

accepted as (
    select
        _source_file,
        count(*) as accepted_rows
    from {{ ref('dwd_client__events') }}
    group by _source_file
),

rejected as (
    select
        _source_file,
        count(*) as rejected_rows
    from {{ ref('dwd_quarantine__rejected_records') }}
    where source_table = 'client_events'
    group by _source_file
)

select
    coalesce(landed._source_file, accepted._source_file, rejected._source_file) as _source_file,
    coalesce(landed.landed_rows, 0) as landed_rows,
    coalesce(accepted.accepted_rows, 0) as accepted_rows,
    coalesce(rejected.rejected_rows, 0) as rejected_rows
from landed
full outer join accepted on landed._source_file = accepted._source_file
full outer join rejected on coalesce(landed._source_file, accepted._source_file) = rejected._source_file
where
    coalesce(landed.landed_rows, 0)
    != coalesce(accepted.accepted_rows, 0) + coalesce(rejected.rejected_rows, 0)
