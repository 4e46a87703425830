{#- The incremental filter of every model below ODS: rows whose ODS load id is above the
    highest one this model has processed. Load ids come from the run lock and only grow, and
    only the lock's holder writes, so no load is skipped or taken twice, whatever the clocks
    say or however runs overlap. The watermark is resolved before the model's SQL runs and
    rendered as a literal (Iceberg prunes files by it; a reviewer sees it in target/).
    On a first build: every row. `target_column` names the watermark in this model when it
    differs; `target_filter` narrows it (one watermark per source in a shared table);
    `at_least`: a load id the watermark is at least (the load a reader recorded having read a
    source through: checked_through.sql); `watermark`: load_watermark's answer, already read. -#}
{% macro loaded_since_last_run(column='_load_id', target_column=none, target_filter=none, at_least=0, watermark=none) %}
    {%- if not is_incremental() -%}
        true
    {%- else -%}
        {%- set watermark = watermark if watermark is not none
            else load_watermark(column, target_column, target_filter, at_least) -%}
        {%- if watermark is not none -%}
            {{ column }} > {{ watermark }}
        {%- else -%}
            {#- unit tests give `this` as a fixture: read it inline -#}
            {{ column }} > ({{ _load_watermark_sql(column, target_column, target_filter) }})
        {%- endif -%}
    {%- endif -%}
{% endmacro %}

{#- The loads this model has already processed (up to its watermark), as a literal: what a
    backfill may recompute. -#}
{% macro processed_loads(column='_load_id') %}
    {%- set watermark = run_query('select coalesce(max(' ~ column ~ '), 0) from ' ~ this) -%}
    {{ column }} <= {{ watermark.columns[0].values()[0] }}
{%- endmacro %}
