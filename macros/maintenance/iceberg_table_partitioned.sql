{#- Whether an Iceberg table is partitioned, from DESCRIBE TABLE (catalog metadata, no
    Spark job): a table partitioned by identity columns lists a "# Partition Information"
    section, one with a transform (days(event_at), bucket(...)) a "# Partitioning" section.
    Returns true, false, or the error text. -#}
{% macro iceberg_table_partitioned(relation) %}
    {%- set described = _maintenance_execute('describe table ' ~ _iceberg_table_name(relation)) -%}
    {%- if described.error -%}{{ return(described.error) }}{%- endif -%}
    {%- for row in described.table.rows if row[0] in ('# Partition Information', '# Partitioning') -%}
        {{ return(true) }}
    {%- endfor -%}
    {{ return(false) }}
{% endmacro %}
