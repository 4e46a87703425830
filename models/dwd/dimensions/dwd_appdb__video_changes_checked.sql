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
        record.op,
        try_cast(record.video_id as bigint) as video_id,
        try_cast(record.author_user_id as bigint) as author_user_id,
        record.title,
        record.category,
        try_cast(record.duration_ms as int) as duration_ms,
        try_cast(record.published_at as timestamp) as published_at,
        try_cast(record._source_lsn as bigint) as source_lsn,
        try_cast(record._source_committed_at as timestamp) as source_committed_at,
        try_cast(record._kafka_partition as int) as kafka_partition,
        try_cast(record._kafka_offset as bigint) as kafka_offset,
        {{ invalid_value_reason([
            ['author_user_id', 'bigint'],
            ['duration_ms', 'int'],
            ['published_at', 'timestamp'],
            ['_source_committed_at', 'timestamp'],
        ]) }} as invalid_value_reason,
        {{ invalid_value_reason([['_kafka_partition', 'int'], ['_kafka_offset', 'bigint']]) }}
            as invalid_arrival_reason,
        record is null or record._corrupt_record is not null as is_unparseable,
        _raw_line as raw_record,
        _source_file,
        _source_line,
        _batch_id,
        _load_id,
        _loaded_at
    from ods
),

ranked as (
    select
        *,
        {{ redelivery_rank() }} as delivery_rank
    from typed
)

select
    *,
    {{ changelog_reject_reason('video_id') }} as reject_reason
from ranked
