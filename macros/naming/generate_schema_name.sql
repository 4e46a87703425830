{#- Folder = layer = schema: a model in models/dwd lands in schema `dwd`, on every target.
    Targets are isolated by their metastore and warehouse, not by schema prefixes. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
