{{ config(partition_by=['event_date']) }}

{#- Per user and day: activity and engagement. Recomputes only the days touched by newly
    loaded events and overwrites exactly those day partitions. -#}
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
    user_id,
    event_date,
    count(*) as events,
    count_if(event_type = 'play') as plays,
    count(distinct case when event_type = 'play' then video_id end) as videos_played,
    coalesce(sum(case when event_type = 'play' then watch_ms end), 0) as watch_ms,
    count_if(event_type = 'like') as likes,
    count_if(event_type = 'share') as shares,
    count_if(event_type = 'comment') as comments,
    count_if(event_type = 'follow') as follows,
    min(event_at) as first_event_at,
    max(event_at) as last_event_at,
    max(_loaded_at) as _max_loaded_at
from day_events
group by user_id, event_date
