{{ config(partition_by=['event_date']) }}

{#- Per video and day: reach, plays, watch time, engagement and completion. A run
    recomputes only the days its newly loaded events fall in (late events included) and
    overwrites exactly those day partitions. -#}
with events as (
    select * from {{ ref('dwd_client__events') }}
),

{% if is_incremental() -%}
touched_days as (
    select distinct event_date from events
    where _loaded_at > (select coalesce(max(_max_loaded_at), timestamp'1970-01-01') from {{ this }})
),
{%- endif %}

day_events as (
    select * from events
    {% if is_incremental() -%}
        where event_date in (select touched_days.event_date from touched_days)
    {%- endif %}
)

select
    video_id,
    event_date,
    count_if(event_type = 'impression') as impressions,
    count_if(event_type = 'play') as plays,
    count(distinct case when event_type = 'play' then user_id end) as unique_viewers,
    coalesce(sum(case when event_type = 'play' then watch_ms end), 0) as watch_ms,
    count_if(event_type = 'like') as likes,
    count_if(event_type = 'share') as shares,
    count_if(event_type = 'comment') as comments,
    count_if(is_completed_play) as completed_plays,
    try_divide(count_if(is_completed_play), count_if(event_type = 'play')) as completion_rate,
    max(_loaded_at) as _max_loaded_at
from day_events
group by video_id, event_date
