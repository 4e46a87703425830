with source as (
    select
        *,
        {{ landed_batch_columns() }}
    from {{ source('client', 'events') }}
)

select * from source
{{ unloaded_batches_only() }}
