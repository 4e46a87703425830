{#- Run one maintenance statement and return {'table': ..., 'error': ...}. With
    `adapter.try_execute` (the project's `lakehouse` adapter, dbt/adapters/lakehouse/) a
    failure comes back as text, so maintenance can warn instead of failing a model whose data
    already committed; without it (a `type: spark` profile) the error raises as run_query's
    would. -#}
{% macro _maintenance_execute(sql) %}
    {%- if adapter.try_execute is defined -%}
        {{ return(adapter.try_execute(sql)) }}
    {%- endif -%}
    {{ return({'table': run_query(sql), 'error': none}) }}
{% endmacro %}
