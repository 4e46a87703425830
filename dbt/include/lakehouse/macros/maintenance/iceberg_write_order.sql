{#- Applies a model's `write_order` config (a column list) as the Iceberg table's write
    order, so later writes and sort compactions cluster rows by it. Idempotent; no statement
    when the node's `describe` of the table (before its write) shows that order in place. -#}
{% macro iceberg_write_order(relation=this) %}
    {%- set columns = config.get('write_order') -%}
    {%- if not execute or not columns -%}{{ return('') }}{%- endif -%}
    {%- set sort_order = _iceberg_sort_order(columns) -%}
    {%- set distribution = 'hash' if config.get('partition_by') else 'range' -%}
    {%- set described = adapter.described_properties(relation) or {} -%}
    {%- if described.get('sort-order') == sort_order
          and described.get('write.distribution-mode') == distribution -%}
        {{ return('') }}
    {%- endif -%}
    {%- if config.get('partition_by') -%}
        {{ return('alter table ' ~ relation ~ ' write distributed by partition locally ordered by ' ~ sort_order) }}
    {%- endif -%}
    {{ return('alter table ' ~ relation ~ ' write ordered by ' ~ sort_order) }}
{% endmacro %}
