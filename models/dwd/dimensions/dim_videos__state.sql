{{ config(
    unique_key='video_id',
    write_order=['video_id'],
    meta={'tombstones': true},
    post_hook="{{ record_rebuild() }}",
) }}

{#- Per video, the last applied change of the `videos` changelog, deletes as tombstones.
    dim_videos shows the live rows. -#}
{{ dimension_state(
    ref('dwd_appdb__video_changes_checked'),
    'video_id',
    ['author_user_id', 'title', 'category', 'duration_ms', 'published_at'],
) }}
