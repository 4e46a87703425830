{#- Where an ODS model's landing listing starts (epoch milliseconds): the listing of the
    newest load in this table, minus var('landing_listing_margin_minutes') for clock
    differences between the file system and Spark; 0 (every folder) on a first load, with
    var('landing_full_listing') (a nightly safety net), or before the table has `_listed_at`.
    A run that found nothing commits no load, so the next listing starts no later. -#}
{% macro landing_listing_since() %}
    {%- if not execute or not is_incremental() or var('landing_full_listing') -%}
        {{ return(0) }}
    {%- endif -%}
    {%- set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | list -%}
    {%- if '_listed_at' not in columns -%}{{ return(0) }}{%- endif -%}
    {%- set margin_ms = (var('landing_listing_margin_minutes') | int) * 60000 -%}
    {%- set newest = run_query('select unix_millis(max(_listed_at)) from ' ~ this).columns[0].values()[0] -%}
    {{ return(0 if newest is none else [newest | int - margin_ms, 1] | max) }}
{% endmacro %}
