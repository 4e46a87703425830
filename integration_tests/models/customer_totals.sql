{{ config(materialized='table') }}
select c.customer_id, c.name, count(o.order_id) as orders, sum(o.amount) as amount
from {{ ref('customers') }} as c
left join {{ ref('stg_orders') }} as o on o.customer_id = c.customer_id
group by c.customer_id, c.name
