{{ config(materialized='ephemeral') }}

{#- Every ODS client event, typed, with the first rule it breaks (null when it is valid).
    Shared by the event detail (valid rows) and the quarantine (the rest), so the two can
    never disagree about what is valid. -#}
with ods as (
    select * from {{ ref('ods_client__events') }}
),

typed as (
    select
        nullif(trim(event_id), '') as event_id,
        try_cast(user_id as bigint) as user_id,
        try_cast(video_id as bigint) as video_id,
        lower(trim(event_type)) as event_type,
        try_cast(event_at as timestamp) as event_at,
        try_cast(watch_ms as int) as watch_ms,
        try_cast(video_duration_ms as int) as video_duration_ms,
        lower(os) as os,
        app_version,
        region,
        try_cast(_ingested_at as timestamp) as ingested_at,
        try_cast(_kafka_partition as int) as kafka_partition,
        try_cast(_kafka_offset as bigint) as kafka_offset,
        {{ invalid_value_reason([
            ['watch_ms', 'int'], ['video_duration_ms', 'int'], ['_ingested_at', 'timestamp'],
            ['_kafka_partition', 'int'], ['_kafka_offset', 'bigint'],
        ]) }} as invalid_value_reason,
        _corrupt_record,
        coalesce(_corrupt_record, {{ landed_record_json('client', 'events') }}) as raw_record,
        _source_file,
        _batch_id,
        _loaded_at
    from ods
)

select
    *,
    case
        when _corrupt_record is not null then 'unparseable_record'
        when event_id is null then 'missing_event_id'
        when user_id is null then 'invalid_user_id'
        when video_id is null then 'invalid_video_id'
        when
            not array_contains(
                array({{ "'" ~ var('event_types') | join("', '") ~ "'" }}), coalesce(event_type, '')
            )
            then 'unknown_event_type'
        when event_at is null then 'invalid_event_at'
        when event_at > ingested_at + make_interval(0, 0, 0, 0, {{ var('max_clock_skew_hours') }})
            then 'event_at_in_future'
        when event_at < ingested_at - make_interval(0, 0, 0, {{ var('max_event_lateness_days') }})
            then 'event_at_too_old'
        when invalid_value_reason is not null then invalid_value_reason
    end as reject_reason
from typed
