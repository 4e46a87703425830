{#- Widen a column's type in place: int -> bigint, float -> double, decimal(P, S) -> decimal(P2,
    S) with P2 > P, the promotions Iceberg allows without rewriting data. Anything else fails
    before touching the table (the adapter's _iceberg_widens decides). Then change the model to
    produce the wider type:
        dbt run-operation widen_column --args '{model: dwd_client__events, column: watch_ms, type: bigint}' -#}
{% macro widen_column(model, column, type) %}
    {%- set table = _model_table(model) -%}
    {%- set current = _column_type(table.relation, column) | lower -%}
    {%- set wanted = type | lower | replace(' ', '') -%}
    {%- if not _iceberg_widens(current, wanted) -%}
        {{ exceptions.raise_compiler_error(table.relation ~ "." ~ column ~ ": " ~ current ~ " -> " ~ type
            ~ " is not a widening Iceberg allows in place (int -> bigint, float -> double, "
            ~ "decimal(P,S) -> decimal(P2,S) with P2 > P); anything else needs a new column and a backfill") }}
    {%- endif -%}
    {%- do run_query('alter table ' ~ table.relation ~ ' alter column ' ~ adapter.quote(column) ~ ' type ' ~ wanted) -%}
    {{ log(table.relation ~ ": column " ~ column ~ " widened " ~ current ~ " -> " ~ wanted ~ " (metadata only)", info=true) }}
{% endmacro %}
