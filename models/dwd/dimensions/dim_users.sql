{{ config(materialized='view') }}

{#- Current state of the source `users` table: the live rows of dim_users__state (a deleted
    key stays there as a tombstone, not here). -#}
select
    user_id,
    user_name,
    region,
    is_creator,
    user_level,
    registered_at,
    _change_op,
    _source_lsn,
    _source_committed_at,
    _load_id,
    _loaded_at
from {{ ref('dim_users__state') }}
where not _is_deleted
