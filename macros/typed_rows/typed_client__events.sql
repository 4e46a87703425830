{#- The typed rows of the landing source `client.events`: every ODS client event parsed from
    its raw line, typed, with the first rule it breaks (null when it is valid). Its typed model
    (dwd_client__events_checked) is this macro, and so is what dwd_landing__typed_rows caches
    of this run's load: both render the same SQL. Subqueries, not CTEs: Spark's cache never
    matches a plan that holds a CTE. -#}
{% macro typed_client__events() %}
select
    *,
    case
        when is_unparseable then 'unparseable_record'
        when _is_redelivery then 'redelivered_record'
        when event_id is null then 'missing_event_id'
        when user_id is null then 'invalid_user_id'
        when video_id is null then 'invalid_video_id'
        when
            not array_contains(
                array({{ "'" ~ var('event_types') | join("', '") ~ "'" }}), coalesce(event_type, '')
            )
            then 'unknown_event_type'
        when event_at is null then 'invalid_event_at'
        when invalid_value_reason is not null then invalid_value_reason
        -- both timestamp rules need the arrival time: without it the record is not checkable
        when is_missing_ingested_at then 'missing_ingested_at'
        when event_at > ingested_at + make_interval(0, 0, 0, 0, {{ var('max_clock_skew_hours') }})
            then 'event_at_in_future'
        when event_at < ingested_at - make_interval(0, 0, 0, {{ var('max_event_lateness_days') }})
            then 'event_at_too_old'
    end as reject_reason
from (  -- noqa: ST05
    select
        nullif(trim(ods.record.event_id), '') as event_id,
        try_cast(ods.record.user_id as bigint) as user_id,
        try_cast(ods.record.video_id as bigint) as video_id,
        lower(trim(ods.record.event_type)) as event_type,
        try_cast(ods.record.event_at as timestamp) as event_at,
        try_cast(ods.record.watch_ms as int) as watch_ms,
        try_cast(ods.record.video_duration_ms as int) as video_duration_ms,
        lower(ods.record.os) as os,
        ods.record.app_version,
        ods.record.region,
        try_cast(ods.record._ingested_at as timestamp) as ingested_at,
        nullif(trim(ods.record._ingested_at), '') is null as is_missing_ingested_at,
        try_cast(ods.record._kafka_partition as int) as kafka_partition,
        try_cast(ods.record._kafka_offset as bigint) as kafka_offset,
        {{ invalid_value_reason([
            ['watch_ms', 'int'], ['video_duration_ms', 'int'], ['_ingested_at', 'timestamp'],
            ['_kafka_partition', 'int'], ['_kafka_offset', 'bigint'],
        ], 'ods.record') }} as invalid_value_reason,
        {{ landed_line_columns() }},
        {{ landed_field_columns('client', 'events') }}
    from ({{ parsed_landed_lines('client', 'events', ref('ods_client__events')) }}) as ods
) as typed
{% endmacro %}
