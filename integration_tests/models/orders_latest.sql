{{ config(materialized='incremental', incremental_strategy='merge', unique_key='order_id') }}
select order_id, customer_id, amount, ordered_at from {{ ref('stg_orders') }}
{% if is_incremental() %}
where ordered_at >= (select coalesce(max(ordered_at), timestamp '1970-01-01') from {{ this }})
{% endif %}
