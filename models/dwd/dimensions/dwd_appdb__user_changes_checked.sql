{{ config(materialized='ephemeral') }}

{#- Every ODS change of `users` parsed from its raw line, typed, with the first rule it
    breaks (null when valid; see changelog_reject_reason for the rules by operation). -#}
with ods as (
    select
        *,
        {{ landed_record('appdb', 'user_changes') }} as record
    from {{ ref('ods_appdb__user_changes') }}
),

typed as (
    select
        ods.record.op,
        try_cast(ods.record.user_id as bigint) as user_id,
        ods.record.user_name,
        ods.record.region,
        try_cast(ods.record.is_creator as boolean) as is_creator,
        try_cast(ods.record.level as int) as user_level,
        try_cast(ods.record.registered_at as timestamp) as registered_at,
        try_cast(ods.record._source_lsn as bigint) as source_lsn,
        try_cast(ods.record._source_committed_at as timestamp) as source_committed_at,
        try_cast(ods.record._kafka_partition as int) as kafka_partition,
        try_cast(ods.record._kafka_offset as bigint) as kafka_offset,
        {{ invalid_value_reason([
            ['is_creator', 'boolean'],
            ['level', 'int'],
            ['registered_at', 'timestamp'],
            ['_source_committed_at', 'timestamp'],
        ], 'ods.record') }} as invalid_value_reason,
        {{ invalid_value_reason(
            [['_kafka_partition', 'int'], ['_kafka_offset', 'bigint']], 'ods.record'
        ) }} as invalid_arrival_reason,
        {{ landed_line_columns() }}
    from ods
)

select
    *,
    {{ changelog_reject_reason('user_id') }} as reject_reason
from typed
