{{ config(
    unique_key='user_id',
    write_order=['user_id'],
    meta={'tombstones': true},
    post_hook="{{ record_rebuild() }}",
) }}

{#- Per user, the last applied change of the `users` changelog, deletes as tombstones.
    dim_users shows the live rows. -#}
{{ dimension_state(
    ref('dwd_appdb__user_changes_checked'),
    'user_id',
    ['user_name', 'region', 'is_creator', 'user_level', 'registered_at'],
) }}
