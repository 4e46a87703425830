{{ config(materialized='view') }}
{{ depends_on_landed_sources() }}

{#- Schema drift: JSON fields seen in landed lines that the source does not declare (so no
    model parses them yet), with how many lines carry them and in which loads. They are not
    lost: ODS keeps every line raw; declaring the field in the source yml surfaces it. -#}
{%- set sources = declared_landed_sources() %}

with fields as (
    {%- for landed in sources %}
        select
            '{{ landed.source_table }}' as source_table,
            field_name,
            _load_id
        from {{ ref(landed.ods) }}
            lateral view explode(map_keys(from_json(_raw_line, 'map<string, string>'))) keys as field_name
        where field_name not in ({{ _quoted(landed_field_names(landed.source_name, landed.table_name)) }})
        {{ 'union all' if not loop.last }}
    {%- endfor %}
)

select
    source_table,
    field_name,
    count(*) as line_count,
    min(_load_id) as first_load_id,
    max(_load_id) as last_load_id
from fields
group by source_table, field_name
