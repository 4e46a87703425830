{#- lookback_days: a late event makes this model recompute its day, up to that far back
    (a retention rule must keep more days: docs/retention.md) -#}
{{
    config(
        partition_by=['event_date'],
        backfill_by='event_date',
        lookback_days=var('max_event_lateness_days'),
    )
}}

{#- Per user and day: activity and engagement. Recomputes only the days touched by newly
    loaded events and overwrites exactly those day partitions. -#}
{%- set days = touched_event_days(ref('dwd_client__events')) %}

with day_events as (
    -- the touched days as literal ranges of the partition source: Iceberg reads only them
    select * from {{ ref('dwd_client__events') }}
    where {{ days_filter(days) }}
)

select
    user_id,
    event_date,
    count(*) as event_count,
    count_if(event_type = 'play') as play_count,
    count(distinct case when event_type = 'play' then video_id end) as videos_played,
    coalesce(sum(case when event_type = 'play' then watch_ms end), 0) as watch_ms,
    count_if(event_type = 'like') as like_count,
    count_if(event_type = 'share') as share_count,
    count_if(event_type = 'comment') as comment_count,
    count_if(event_type = 'follow') as follow_count,
    min(event_at) as first_event_at,
    max(event_at) as last_event_at,
    max(_load_id) as _max_load_id,
    max(_loaded_at) as _max_loaded_at
from day_events
group by user_id, event_date
