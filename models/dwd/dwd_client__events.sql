{#- lookback_days: a new event is compared with the rows of its day, up to that far back (a
    re-sent copy must find its first delivery; a retention rule keeps more: docs/retention.md) -#}
{{
    config(
        partition_by=['days(event_at)'],
        write_order=['user_id', 'video_id'],
        backfill_by='event_at',
        completeness={'arrival_columns': ['ingested_at']},
        lookback_days=var('max_event_lateness_days'),
    )
}}

{#- One row per client event: valid, typed, first delivery only. Appends new ODS loads;
    a re-sent event (same event_id) that is already here is not appended again (it goes to
    the quarantine as duplicate_event_id; a re-delivered record never gets this far). -#}
{%- set backfill = model_backfill() %}
{%- set typed = ref('dwd_client__events_checked') %}
{%- set after = none if backfill else load_watermark() %}
{%- set checked = typed_rows(typed, after=after) %}
{#- a backfill recomputes the loads this model has processed; later ones are the schedule's
    (taking them here would move the watermark past their other days) -#}
{%- set loads = processed_loads() if backfill else loaded_since_last_run(watermark=after) %}
{%- set window = none if backfill else new_events_window(ref('ods_client__events'), loads, typed=typed) %}
{#- every copy is ranked, so a first delivery outside a backfill's range still wins -#}
{%- set in_range = backfill_filter(backfill, 'first_deliveries.event_at') if backfill else 'true' %}

with valid_events as (
    select * from {{ checked }}
    where
        reject_reason is null
        and {{ loads }}
),

first_deliveries as (
    select
        *,
        -- the first delivery is the one from the earliest landed batch, so one build over
        -- several batches keeps the same row as one build per batch would
        row_number() over (
            partition by event_id
            order by
                _batch_id asc, ingested_at asc, kafka_partition asc, kafka_offset asc,
                _source_file asc, _source_line asc
        ) as event_rank
    from valid_events
),

new_events as (
    select first_deliveries.*
    from first_deliveries
    {% if is_incremental() and not backfill -%}
        -- an earlier copy can only lie in the days a new event can have: read just those
        -- (a subquery keeps the whole read inside the incremental branch)
        left anti join (  -- noqa: ST05
            select event_id from {{ this }}
            where {{ in_events_window(window) }}
        ) as loaded
            on first_deliveries.event_id = loaded.event_id
    {%- endif %}
    where
        first_deliveries.event_rank = 1
        and {{ in_range }}
)

select
    event_id,
    user_id,
    video_id,
    event_type,
    event_at,
    to_date(event_at) as event_date,
    watch_ms,
    video_duration_ms,
    event_type = 'play' and watch_ms >= video_duration_ms * 0.9 as is_completed_play,
    os,
    app_version,
    region,
    ingested_at,
    kafka_partition,
    kafka_offset,
    _source_file,
    _source_line,
    _batch_id,
    _load_id,
    _loaded_at
from new_events
