{#- Applies a model's `write_order` config (a column list) as the Iceberg table's write
    order, so later writes and sort compactions cluster rows by it. Idempotent. -#}
{% macro iceberg_write_order(relation=this) %}
    {%- set columns = config.get('write_order') -%}
    {%- if not execute or not columns -%}{{ return('') }}{%- endif -%}
    {%- set sort_order = _iceberg_sort_order(columns) -%}
    {%- if config.get('partition_by') -%}
        {{ return('alter table ' ~ relation ~ ' write distributed by partition locally ordered by ' ~ sort_order) }}
    {%- endif -%}
    {{ return('alter table ' ~ relation ~ ' write ordered by ' ~ sort_order) }}
{% endmacro %}
