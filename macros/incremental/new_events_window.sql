{#- The event_at range in which a newly loaded client event can be accepted, as literals
    (lower, upper), resolved before the model runs: DWD rejects events older than
    max_event_lateness_days or further ahead than max_clock_skew_hours of their arrival, so
    an accepted new event, and any earlier copy of it, lies between the new loads' earliest
    arrival minus the lateness and their latest arrival plus the skew. Deduplication reads
    only those day partitions of the detail table. None on a first build; (none, none) when
    nothing new arrived. The arrival time is read from the raw line as DWD parses it, or,
    for this run's load when it is cached (typed_rows), the typed model's `ingested_at`
    (`typed`: the ref of the source's typed model). `new_loads` is the model's own
    loaded_since_last_run() on `_load_id`, already resolved: the window reads the same loads. -#}
{% macro new_events_window(ods_relation, new_loads, typed=none) %}
    {%- if not execute or not is_incremental() or model.resource_type == 'unit_test' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set cached = none if typed is none else adapter.cached_rows(typed) -%}
    {%- set query -%}
        select
            cast(min(arrived_at) - make_interval(0, 0, 0, {{ var('max_event_lateness_days') }}) as string),
            cast(max(arrived_at) + make_interval(0, 0, 0, 0, {{ var('max_clock_skew_hours') }}) as string)
        from (
            {%- if cached %}
            select ingested_at as arrived_at from {{ cached.relation }} where {{ new_loads }}
            union all
            {%- endif %}
            select try_cast(get_json_object(_raw_line, '$._ingested_at') as timestamp) as arrived_at
            from {{ ods_relation }}
            where {{ new_loads }}{% if cached %} and _load_id < {{ cached.load_id }}{% endif %}
        )
    {%- endset -%}
    {%- set row = run_query(query).rows[0] -%}
    {{ return((row[0], row[1])) }}
{% endmacro %}

{#- `column` within a new_events_window(): `true` without a window, `false` when empty -#}
{% macro in_events_window(window, column='event_at') %}
    {%- if window is none -%}true
    {%- elif window[0] is none -%}false
    {%- else -%}{{ column }} between timestamp'{{ window[0] }}' and timestamp'{{ window[1] }}'
    {%- endif -%}
{% endmacro %}
