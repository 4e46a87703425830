{{ config(materialized='ephemeral') }}

{#- Every ODS change of `users`, typed, with the first rule it breaks (null when valid). -#}
with ods as (
    select * from {{ ref('ods_appdb__user_changes') }}
),

typed as (
    select
        op,
        try_cast(user_id as bigint) as user_id,
        user_name,
        region,
        try_cast(is_creator as boolean) as is_creator,
        try_cast(level as int) as user_level,
        try_cast(registered_at as timestamp) as registered_at,
        try_cast(_source_lsn as bigint) as source_lsn,
        try_cast(_source_committed_at as timestamp) as source_committed_at,
        try_cast(_kafka_partition as int) as kafka_partition,
        try_cast(_kafka_offset as bigint) as kafka_offset,
        {{ invalid_value_reason([
            ['is_creator', 'boolean'], ['level', 'int'], ['registered_at', 'timestamp'],
            ['_source_committed_at', 'timestamp'], ['_kafka_partition', 'int'],
            ['_kafka_offset', 'bigint'],
        ]) }} as invalid_value_reason,
        _corrupt_record,
        coalesce(_corrupt_record, {{ landed_record_json('appdb', 'user_changes') }}) as raw_record,
        _source_file,
        _batch_id,
        _loaded_at
    from ods
)

select
    *,
    coalesce(
        {{ changelog_reject_reason('user_id') }},
        invalid_value_reason
    ) as reject_reason
from typed
