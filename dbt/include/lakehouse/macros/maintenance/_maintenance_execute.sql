{#- Run one maintenance statement and return {'table': ..., 'error': ...}: a failure comes
    back as text (adapter.try_execute), so maintenance can warn instead of failing a model
    whose data already committed. -#}
{% macro _maintenance_execute(sql) %}
    {{ return(adapter.try_execute(sql)) }}
{% endmacro %}
