{{ depends_on_landed_sources() }}
-- depends_on: {{ ref('dwd_landing__typed_rows') }} (this run's typed rows: typed_rows)

{#- The JSON fields each load's landed lines carry, declared or not, with how many lines carry
    each: one row per (load, source, field), appended once per load. Only the loads this table
    has not seen are read (loaded_since_last_run), so a run reads its own batch's lines, never
    the history's; every load with lines adds rows, so the watermark follows every load.
    The lines are not parsed here: the typed model already parsed each one once, keeping the
    fields it carries beyond its declaration and the declared ones it lacks (its rows of this
    run's load are cached: typed_rows). The schema-drift view ods_landing__undeclared_fields
    reads these few rows, not ODS. -#}
{%- set sources = declared_landed_sources() %}
{%- set after = load_watermark() %}  {#- one watermark read, for every source #}
{%- set new_loads = loaded_since_last_run(watermark=after) %}

{%- for landed in sources %}
    {%- set declared = _quoted(landed_field_names(landed.source_name, landed.table_name)) %}
    select
        '{{ landed.source_table }}' as source_table,
        field_name,
        _load_id,
        count(*) as line_count
    from {{ typed_rows(ref(landed.typed), after=after) }}
        lateral view explode(
            array_union(array_except(array({{ declared }}), _absent_fields), _undeclared_fields)
        ) carried as field_name
    where {{ new_loads }}
    group by field_name, _load_id
    {{ 'union all' if not loop.last }}
{%- endfor %}
