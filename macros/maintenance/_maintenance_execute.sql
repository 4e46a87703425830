{#- Run one maintenance statement and return {'table': ..., 'error': ...}. With
    `adapter.try_execute` (scripts/dbt_try_execute.py, installed by `lakehouse dbt`, pytest
    and bench) a failure comes back as text, so maintenance can warn instead of failing a
    model whose data already committed; without it (plain `dbt`) the error raises as
    run_query's would. -#}
{% macro _maintenance_execute(sql) %}
    {%- if adapter.try_execute is defined -%}
        {{ return(adapter.try_execute(sql)) }}
    {%- endif -%}
    {{ return({'table': run_query(sql), 'error': none}) }}
{% endmacro %}
