{{ config(materialized='ephemeral') }}

{#- Every ODS change of `users` parsed, typed from its declaration (_appdb__sources.yml) and
    checked: typed_changelog. -#}
{{ typed_changelog('appdb', 'user_changes') }}
