{#- Widen a column's type in place: int -> bigint, float -> double, decimal(P, S) -> decimal(P2,
    S) with P2 > P, the promotions Iceberg allows without rewriting data. Anything else fails
    before touching the table. Then change the model to produce the wider type:
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

{#- Whether Iceberg changes `current` to `wanted` in place (metadata only). -#}
{% macro _iceberg_widens(current, wanted) %}
    {%- set current = current | lower | replace(' ', '') -%}
    {%- set wanted = wanted | lower | replace(' ', '') -%}
    {%- set allowed = {'int': ['bigint'], 'integer': ['bigint'], 'float': ['double']} -%}
    {%- if current.startswith('decimal(') and wanted.startswith('decimal(') -%}
        {%- set was = current[8:-1].split(',') -%}
        {%- set now = wanted[8:-1].split(',') -%}
        {{ return(now[1] | int == was[1] | int and now[0] | int > was[0] | int) }}
    {%- endif -%}
    {{ return(wanted in allowed.get(current, [])) }}
{% endmacro %}
