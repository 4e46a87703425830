{#- Override: `create or replace view` keeps serving the old SQL on this catalog (apache/iceberg #14557). -#}
{#- A view re-run with new SQL serves the new SQL.

    On this catalog (Iceberg's SparkSessionCatalog over a Hive metastore) `create or replace
    view` of an existing view rewrites Iceberg's view metadata, but reads come through the
    Hive metastore's view text, which the replace leaves as it was: the view went on serving
    its first SQL and dbt reported success (apache/iceberg #14557). A view whose stored text
    differs from the model's is therefore dropped first, and created anew with dbt-spark's
    SQL; a view whose text is unchanged is replaced as before, so a scheduled run never leaves
    readers without it. -#}
{% macro lakehouse__create_view_as(relation, sql) -%}
    {%- if execute and _view_text_changed(relation, sql) -%}
        {%- do run_query('drop view if exists ' ~ relation) -%}
    {%- endif -%}
    {{ dbt.spark__create_view_as(relation, sql) }}
{%- endmacro %}

{#- Whether `relation` is an existing view whose stored text is not `sql` (whitespace aside).
    A view without a schema is dbt's own staging view (a snapshot's), dropped after each use. -#}
{% macro _view_text_changed(relation, sql) %}
    {%- if relation.schema is none -%}{{ return(false) }}{%- endif -%}
    {%- set existing = load_relation(relation) -%}
    {%- if existing is none or not existing.is_view -%}{{ return(false) }}{%- endif -%}
    {%- for row in run_query('describe table extended ' ~ relation).rows if row[0] == 'View Text' -%}
        {{ return((row[1] or '').split() != sql.split()) }}
    {%- endfor -%}
    {{ return(true) }}
{% endmacro %}
