{#- The incremental watermark of every model below ODS: rows whose ODS load time is later
    than the latest one this model has processed. ODS stamps every row of one load with the
    same time, so nothing is skipped or taken twice. On a first build: every row.
    `target_column` names the watermark in this model when it differs; `target_filter`
    narrows it (e.g. one watermark per source in a shared table). -#}
{% macro loaded_since_last_run(column='_loaded_at', target_column=none, target_filter=none) %}
    {%- if is_incremental() -%}
        {{ column }} > (
            select coalesce(max({{ target_column or column }}), timestamp'1970-01-01')
            from {{ this }}
            {%- if target_filter %} where {{ target_filter }}{% endif %}
        )
    {%- else -%}
        true
    {%- endif -%}
{% endmacro %}
