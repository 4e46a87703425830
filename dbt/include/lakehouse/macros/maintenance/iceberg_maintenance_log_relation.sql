{#- Where the maintenance log lives: <schema_prefix><maintenance_log_schema>.maintenance_log. -#}
{% macro iceberg_maintenance_log_relation() %}
    {%- set schema = var('schema_prefix', '') ~ var('maintenance_log_schema', 'ops') -%}
    {{ return(api.Relation.create(schema=schema, identifier='maintenance_log', type='table')) }}
{% endmacro %}
