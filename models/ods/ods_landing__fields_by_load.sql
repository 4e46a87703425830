{{ depends_on_landed_sources() }}

{#- The JSON fields each load's landed lines carry, declared or not, with how many lines carry
    each: one row per (load, source, field), appended once per load. Only the loads this table
    has not seen are parsed (loaded_since_last_run), so a run parses its own batch's lines,
    never the history's; every load with lines adds rows, so the watermark follows every load.
    The schema-drift view ods_landing__undeclared_fields reads these few rows, not ODS. -#}
{%- set sources = declared_landed_sources() %}

{%- for landed in sources %}
    select
        '{{ landed.source_table }}' as source_table,
        field_name,
        _load_id,
        count(*) as line_count
    from {{ ref(landed.ods) }}
        lateral view explode(map_keys(from_json(_raw_line, 'map<string, string>'))) keys as field_name
    where {{ loaded_since_last_run() }}
    group by field_name, _load_id
    {{ 'union all' if not loop.last }}
{%- endfor %}
