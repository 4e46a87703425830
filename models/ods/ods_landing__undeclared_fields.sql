{{ config(materialized='view') }}

{#- Schema drift: JSON fields seen in landed lines that the source does not declare (so no
    model parses them yet), with how many lines carry them and in which loads. They are not
    lost: ODS keeps every line raw; declaring the field in the source yml surfaces it, and
    drops it from here at once (the declarations are read when this view is created). Reads
    the per-load field counts, a few rows per load, never the landed lines. -#}
{%- set undeclared = [] %}
{%- for landed in declared_landed_sources() %}
    {%- set declared = _quoted(landed_field_names(landed.source_name, landed.table_name)) %}
    {%- set source = "source_table = '" ~ landed.source_table ~ "'" %}
    {%- do undeclared.append("(" ~ source ~ " and field_name not in (" ~ declared ~ "))") %}
{%- endfor %}

select
    source_table,
    field_name,
    sum(line_count) as line_count,
    min(_load_id) as first_load_id,
    max(_load_id) as last_load_id
from {{ ref('ods_landing__fields_by_load') }}
where {{ undeclared | join(' or ') }}
group by source_table, field_name
