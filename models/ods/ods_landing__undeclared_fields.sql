{{ config(materialized='view') }}

{#- Schema drift: JSON fields seen in landed lines that the source does not declare (so no
    model parses them yet), with how many lines carry them and in which loads. They are not
    lost: ODS keeps every line raw; declaring the field in the source yml surfaces it. -#}
{%- set sources = [
    ['client_events', 'client', 'events', 'ods_client__events'],
    ['appdb_users', 'appdb', 'user_changes', 'ods_appdb__user_changes'],
    ['appdb_videos', 'appdb', 'video_changes', 'ods_appdb__video_changes'],
] %}

with fields as (
    {%- for source_table, source_name, table_name, model in sources %}
        select
            '{{ source_table }}' as source_table,
            field_name,
            _load_id
        from {{ ref(model) }}
            lateral view explode(map_keys(from_json(_raw_line, 'map<string, string>'))) keys as field_name
        where field_name not in ({{ _quoted(landed_field_names(source_name, table_name)) }})
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
