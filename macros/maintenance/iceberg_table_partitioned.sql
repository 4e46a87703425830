{#- Whether an Iceberg table is partitioned, from DESCRIBE TABLE (catalog metadata, no
    Spark job): a partitioned table lists a "# Partition Information" section. Returns
    true, false, or the error text. -#}
{% macro iceberg_table_partitioned(relation) %}
    {%- set described = _maintenance_execute('describe table ' ~ _iceberg_table_name(relation)) -%}
    {%- if described.error -%}{{ return(described.error) }}{%- endif -%}
    {%- for row in described.table.rows if row[0] == '# Partition Information' -%}
        {{ return(true) }}
    {%- endfor -%}
    {{ return(false) }}
{% endmacro %}
