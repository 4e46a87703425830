{{ config(materialized='view') }}

{#- Current state of the source `videos` table: the live rows of dim_videos__state (a deleted
    key stays there as a tombstone, not here). -#}
select
    video_id,
    author_user_id,
    title,
    category,
    duration_ms,
    published_at,
    _change_op,
    _source_lsn,
    _source_committed_at,
    _load_id,
    _loaded_at
from {{ ref('dim_videos__state') }}
where not _is_deleted
