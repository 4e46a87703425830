{#- The event days a DWS model must recompute: the days of the events loaded since its last
    run, resolved before the model's SQL runs (run_query) and returned as a list of
    'YYYY-MM-DD' strings. The upstream is read through its load-id metrics only. A backfill's
    days instead when the run backfills this model; only the complete ones with var
    publish_complete_days_only (macros/completeness/). -#}
{% macro touched_event_days(upstream, target_column='_max_load_id') %}
    {%- if not execute or model.resource_type == 'unit_test' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set backfill = model_backfill() -%}
    {%- if backfill -%}
        {{ return(backfill.days) }}
    {%- endif -%}
    {%- set days = none -%}
    {%- if is_incremental() -%}
        {%- set query -%}
            select distinct cast(event_date as string) from {{ upstream }}
            where {{ loaded_since_last_run(target_column=target_column) }}
            order by 1
        {%- endset -%}
        {%- set days = run_query(query).columns[0].values() | list -%}
    {%- endif -%}
    {%- if var('publish_complete_days_only', false) -%}
        {{ return(complete_days_only(upstream, days)) }}
    {%- endif -%}
    {{ return(days) }}
{% endmacro %}

{#- With var publish_complete_days_only: of the days to compute (`days`; none = every day),
    those the upstream's completeness watermark covers, plus the days it newly covered since
    this model's own watermark (days that waited on an earlier run). The others wait, with a
    log line. A day is complete when the watermark has passed its end. -#}
{% macro complete_days_only(upstream, days) %}
    {%- set through = completeness_of(upstream) -%}
    {%- if through is none -%}
        {{ log(this ~ ": " ~ upstream ~ " has no completeness watermark yet: every day waits", info=true) }}
        {{ return([]) }}
    {%- endif -%}
    {%- set through_day = through[:10] -%}
    {%- if days is none -%}
        {%- set days = run_query('select distinct cast(event_date as string) from ' ~ upstream).columns[0].values() | list -%}
    {%- endif -%}
    {%- set previous = completeness_of(this) -%}
    {%- set covered_query -%}
        select distinct cast(event_date as string) from {{ upstream }}
        where event_at < '{{ through_day }}'
        {%- if previous %} and event_at >= '{{ previous[:10] }}'{% endif %}
    {%- endset -%}
    {%- set candidates = run_query(covered_query).columns[0].values() | list -%}
    {%- set candidates = (candidates + days) | unique | sort -%}
    {%- set waiting = candidates | reject('lt', through_day) | list -%}
    {%- if waiting -%}
        {{ log(this ~ ": " ~ waiting | join(', ') ~ " not complete yet (" ~ upstream
            ~ " complete through " ~ through ~ "): left for a later run", info=true) }}
    {%- endif -%}
    {{ return(candidates | select('lt', through_day) | list) }}
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
