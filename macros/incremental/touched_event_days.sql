{#- The event days a DWS model must recompute: the days of the events loaded since its last
    run, resolved before the model's SQL runs (run_query) and returned as a list of
    'YYYY-MM-DD' strings. The upstream is read through its load-id metrics only. -#}
{% macro touched_event_days(upstream, target_column='_max_load_id') %}
    {%- if not execute or not is_incremental() or model.resource_type == 'unit_test' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set query -%}
        select distinct cast(event_date as string) from {{ upstream }}
        where {{ loaded_since_last_run(target_column=target_column) }}
        order by 1
    {%- endset -%}
    {{ return(run_query(query).columns[0].values() | list) }}
{% endmacro %}

{#- A filter on `column` (a timestamp whose day partitions the upstream) selecting `days`
    as literal ranges, which Iceberg turns into partition pruning; `true` when `days` is
    none (a first build), `false` when it is empty. -#}
{% macro event_days_filter(days, column='event_at') %}
    {%- if days is none -%}true
    {%- elif not days -%}false
    {%- else -%}
        (
            {%- for day in days %}
            ({{ column }} >= timestamp'{{ day }} 00:00:00' and {{ column }} < timestamp'{{ day }} 00:00:00' + interval 1 day)
            {{- ' or' if not loop.last }}
            {%- endfor %}
        )
    {%- endif -%}
{% endmacro %}
