{#- The highest load id this model has processed (of its rows matching `target_filter`, in
    `target_column`), at least `at_least`: the number loaded_since_last_run compares with.
    None when every row is new (a first build, a full refresh), outside execution and in a
    unit test (its `this` is a fixture, read inline). A model that also reads a typed model's
    cache passes it to typed_rows(after=...) and to loaded_since_last_run(watermark=...):
    one statement for both. -#}
{% macro load_watermark(column='_load_id', target_column=none, target_filter=none, at_least=0) %}
    {%- if not is_incremental() or not execute or model.resource_type == 'unit_test' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set watermark = run_query(_load_watermark_sql(column, target_column, target_filter)) -%}
    {{ return([watermark.columns[0].values()[0], at_least] | max) }}
{% endmacro %}

{#- load_watermark of several parts of this model in one statement: `target_filters` maps a
    name to its rows' filter; returns {name: watermark (at least `at_least[name]`)}, or none
    where load_watermark returns none. -#}
{% macro load_watermarks(target_filters, at_least={}, column='_load_id') %}
    {%- if not is_incremental() or not execute or model.resource_type == 'unit_test' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set names, queries = [], [] -%}
    {%- for name, target_filter in target_filters.items() -%}
        {%- do names.append(name) -%}
        {%- do queries.append('(' ~ _load_watermark_sql(column, none, target_filter) ~ ')') -%}
    {%- endfor -%}
    {%- set row = run_query('select ' ~ queries | join(', ')).rows[0] -%}
    {%- set watermarks = {} -%}
    {%- for name in names -%}
        {%- do watermarks.update({name: [row[loop.index0], at_least.get(name, 0)] | max}) -%}
    {%- endfor -%}
    {{ return(watermarks) }}
{% endmacro %}

{#- The query of that watermark (without `at_least`) -#}
{% macro _load_watermark_sql(column, target_column, target_filter) -%}
    select coalesce(max({{ target_column or column }}), 0) from {{ this }}
    {%- if target_filter %} where {{ target_filter }}{% endif %}
{%- endmacro %}
