{#- Where the maintenance log lives: beside the run lock and the run records, in the
    platform's schema. -#}
{% macro iceberg_maintenance_log_relation() %}
    {{ return(api.Relation.create(schema=platform_schema(), identifier='maintenance_log', type='table')) }}
{% endmacro %}
