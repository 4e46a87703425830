{#- Folder = layer = schema: a model in models/dwd lands in schema `dwd`, on every target.
    Targets are isolated by their metastore and warehouse; var `schema_prefix` isolates
    builds that share one (a CI run, a test) without touching the folder layout. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ var('schema_prefix') ~ ((custom_schema_name or target.schema) | trim) }}
{%- endmacro %}
