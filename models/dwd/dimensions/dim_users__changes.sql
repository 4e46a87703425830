{{ config(
    materialized='incremental',
    incremental_strategy='append',
    full_refresh=false,
    post_hook="{{ record_changes_through() }}",
) }}

{#- What changed in dim_users, run by run, append-only: insert, update_before/update_after
    and delete images of its rows (macros/dimensions/dimension_changes.sql). Never rebuilt
    (full_refresh=false): its consumers resume from its snapshots. -#}
{{ dimension_changes(
    ref('dim_users__state'),
    ref('dwd_appdb__user_changes_checked'),
    'user_id',
    ['user_name', 'region', 'is_creator', 'user_level', 'registered_at'],
) }}
