-- Relationships from the event fact to the dimensions. Facts are history: an event may
-- belong to a user or video deleted since, so a key must be current in the dimension or
-- deleted in the source's changelog. Anything else is an orphan. A scheduled run checks the
-- events of the loads since the last published run, every other invocation every event.
with events as (
    select
        event_id,
        user_id,
        video_id
    from {{ ref('dwd_client__events') }}
    where {{ since_last_publish('_load_id') }}
),

deleted_users as (
    select distinct try_cast(get_json_object(_raw_line, '$.user_id') as bigint) as user_id
    from {{ ref('ods_appdb__user_changes') }}
    where get_json_object(_raw_line, '$.op') = '-D'
),

deleted_videos as (
    select distinct try_cast(get_json_object(_raw_line, '$.video_id') as bigint) as video_id
    from {{ ref('ods_appdb__video_changes') }}
    where get_json_object(_raw_line, '$.op') = '-D'
)

select
    events.event_id,
    events.user_id,
    events.video_id
from events
left join {{ ref('dim_users') }} as current_users on events.user_id = current_users.user_id
left join deleted_users on events.user_id = deleted_users.user_id
left join {{ ref('dim_videos') }} as current_videos on events.video_id = current_videos.video_id
left join deleted_videos on events.video_id = deleted_videos.video_id
where
    (current_users.user_id is null and deleted_users.user_id is null)
    or (current_videos.video_id is null and deleted_videos.video_id is null)
