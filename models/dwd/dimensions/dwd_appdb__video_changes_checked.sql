{{ config(materialized='ephemeral') }}

{#- Every ODS change of `videos` parsed, typed from its declaration (_appdb__sources.yml) and
    checked: typed_changelog. -#}
{{ typed_changelog('appdb', 'video_changes') }}
