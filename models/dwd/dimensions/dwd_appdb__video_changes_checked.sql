{{ config(materialized='ephemeral') }}

{#- Every ODS change of `videos`, typed, with the first rule it breaks (null when valid). -#}
with ods as (
    select * from {{ ref('ods_appdb__video_changes') }}
),

typed as (
    select
        op,
        try_cast(video_id as bigint) as video_id,
        try_cast(author_user_id as bigint) as author_user_id,
        title,
        category,
        try_cast(duration_ms as int) as duration_ms,
        try_cast(published_at as timestamp) as published_at,
        try_cast(_source_lsn as bigint) as source_lsn,
        try_cast(_source_committed_at as timestamp) as source_committed_at,
        try_cast(_kafka_partition as int) as kafka_partition,
        try_cast(_kafka_offset as bigint) as kafka_offset,
        {{ invalid_value_reason([
            ['author_user_id', 'bigint'], ['duration_ms', 'int'], ['published_at', 'timestamp'],
            ['_source_committed_at', 'timestamp'], ['_kafka_partition', 'int'],
            ['_kafka_offset', 'bigint'],
        ]) }} as invalid_value_reason,
        _corrupt_record,
        coalesce(_corrupt_record, {{ landed_record_json('appdb', 'video_changes') }}) as raw_record,
        _source_file,
        _batch_id,
        _loaded_at
    from ods
)

select
    *,
    coalesce(
        {{ changelog_reject_reason('video_id') }},
        invalid_value_reason
    ) as reject_reason
from typed
