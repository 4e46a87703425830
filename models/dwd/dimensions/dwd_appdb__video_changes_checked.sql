{{ config(materialized='ephemeral') }}

{#- Every ODS change of `videos` parsed from its raw line, typed, with the first rule it
    breaks (null when valid; see changelog_reject_reason for the rules by operation). -#}
with ods as (
    select
        *,
        {{ landed_record('appdb', 'video_changes') }} as record
    from {{ ref('ods_appdb__video_changes') }}
),

typed as (
    select
        ods.record.op,
        try_cast(ods.record.video_id as bigint) as video_id,
        try_cast(ods.record.author_user_id as bigint) as author_user_id,
        ods.record.title,
        ods.record.category,
        try_cast(ods.record.duration_ms as int) as duration_ms,
        try_cast(ods.record.published_at as timestamp) as published_at,
        try_cast(ods.record._source_lsn as bigint) as source_lsn,
        try_cast(ods.record._source_committed_at as timestamp) as source_committed_at,
        try_cast(ods.record._kafka_partition as int) as kafka_partition,
        try_cast(ods.record._kafka_offset as bigint) as kafka_offset,
        {{ invalid_value_reason([
            ['author_user_id', 'bigint'],
            ['duration_ms', 'int'],
            ['published_at', 'timestamp'],
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
    {{ changelog_reject_reason('video_id') }} as reject_reason
from typed
