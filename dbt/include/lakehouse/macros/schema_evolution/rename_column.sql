{#- Rename a column of a model's Iceberg table in place: a metadata change, no data file is
    rewritten, and snapshots before it still read with the old name. Run it, then rename the
    column in the model's SQL (docs/schema-evolution.md):
        dbt run-operation rename_column --args '{model: dwd_client__events, old: os, new: os_name}' -#}
{% macro rename_column(model, old, new) %}
    {%- set table = _model_table(model) -%}
    {%- do _column_type(table.relation, old) -%}
    {%- do run_query('alter table ' ~ table.relation ~ ' rename column ' ~ adapter.quote(old) ~ ' to ' ~ adapter.quote(new)) -%}
    {{ log(table.relation ~ ": column " ~ old ~ " renamed " ~ new ~ " (metadata only)", info=true) }}
{% endmacro %}
