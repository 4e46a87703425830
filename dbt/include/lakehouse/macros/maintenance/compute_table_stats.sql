{#- CALL system.compute_table_stats: writes a Puffin statistics file with each column's
    number of distinct values (theta sketches) for the current snapshot; Spark's planner
    reads them for join ordering and broadcast choices. `columns`: only these (identifiers). -#}
{% macro compute_table_stats(relation, columns=none) %}
    {{ return(adapter.dispatch('compute_table_stats')(relation, columns)) }}
{% endmacro %}

{% macro lakehouse__compute_table_stats(relation, columns) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    call spark_catalog.system.compute_table_stats(
        table => '{{ table_name }}'
        {%- if columns %},
        columns => array({%- for column in _iceberg_identifiers(columns) -%}'{{ column }}'{{ ', ' if not loop.last }}{%- endfor -%})
        {%- endif %}
    )
{% endmacro %}
