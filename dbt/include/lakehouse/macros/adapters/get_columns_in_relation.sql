{#- Override: dbt-spark returns raw `describe extended` rows, not Column objects (dbt-core #11949). -#}
{#- The columns of a relation as dbt Column objects, as every other adapter's macro returns them.
    dbt-spark's returns the raw `describe extended` rows, so dbt's own macros that read `.name`
    from them found no column: a snapshot with `hard_deletes: new_record` wrote deletion records
    whose source columns were all null (dbt-databricks fixed its copy the same way). The
    adapter's method parses the same rows. -#}
{% macro lakehouse__get_columns_in_relation(relation) -%}
    {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}
