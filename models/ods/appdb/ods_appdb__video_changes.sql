with source as (
    select
        *,
        {{ landed_batch_columns() }}
    from {{ source('appdb', 'video_changes') }}
)

select * from source
{{ unloaded_batches_only() }}
