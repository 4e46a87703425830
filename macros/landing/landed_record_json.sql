{#- The record as the source sent it, as JSON: the landing source's declared columns, not
    the arrival columns ODS adds (`_source_file`, `_batch_id`, `_loaded_at`), so the same
    record quarantined by two builds reads the same. -#}
{% macro landed_record_json(source_name, table_name) %}
    {%- if not execute -%}{{ return('to_json(struct(*))') }}{%- endif -%}
    {%- set columns = [] -%}
    {%- for node in graph.sources.values() if node.source_name == source_name and node.name == table_name -%}
        {%- for column in node.columns if column != '_corrupt_record' -%}
            {%- do columns.append(column) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- if not columns -%}
        {{ exceptions.raise_compiler_error("landed_record_json: no declared columns for source " ~ source_name ~ "." ~ table_name) }}
    {%- endif -%}
    to_json(struct({{ columns | join(', ') }}))
{%- endmacro %}
