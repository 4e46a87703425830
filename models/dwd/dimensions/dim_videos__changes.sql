{{ config(
    materialized='incremental',
    incremental_strategy='append',
    full_refresh=false,
    post_hook="{{ record_changes_through() }}",
) }}

{#- What changed in dim_videos, run by run, append-only: insert, update_before/update_after
    and delete images of its rows (macros/dimensions/dimension_changes.sql). Never rebuilt
    (full_refresh=false): its consumers resume from its snapshots. -#}
{{ dimension_changes(
    ref('dim_videos__state'),
    ref('dwd_appdb__video_changes_checked'),
    'video_id',
    ['author_user_id', 'title', 'category', 'duration_ms', 'published_at'],
) }}
