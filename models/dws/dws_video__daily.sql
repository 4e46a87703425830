{#- lookback_days: a late event makes this model recompute its day, up to that far back
    (a retention rule must keep more days: docs/retention.md) -#}
{{
    config(
        partition_by=['event_date'],
        backfill_by='event_date',
        lookback_days=var('max_event_lateness_days'),
    )
}}

{#- Per video and day: reach, plays, watch time, engagement and completion. A run
    recomputes only the days its newly loaded events fall in (late events included) and
    overwrites exactly those day partitions. -#}
{%- set days = touched_event_days(ref('dwd_client__events')) %}

with day_events as (
    -- the touched days as literal ranges of the partition source: Iceberg reads only them
    select * from {{ ref('dwd_client__events') }}
    where {{ days_filter(days) }}
)

select
    video_id,
    event_date,
    count_if(event_type = 'impression') as impression_count,
    count_if(event_type = 'play') as play_count,
    count(distinct case when event_type = 'play' then user_id end) as unique_viewers,
    coalesce(sum(case when event_type = 'play' then watch_ms end), 0) as watch_ms,
    count_if(event_type = 'like') as like_count,
    count_if(event_type = 'share') as share_count,
    count_if(event_type = 'comment') as comment_count,
    count_if(is_completed_play) as completed_play_count,
    try_divide(count_if(is_completed_play), count_if(event_type = 'play')) as completion_rate,
    max(_load_id) as _max_load_id,
    max(_loaded_at) as _max_loaded_at
from day_events
group by video_id, event_date
