{#- What every checked model carries of its ODS line, after its typed fields: whether the
    line parsed, the line itself, and where, in which load and when it landed. -#}
{% macro landed_line_columns(ods='ods') -%}
    {{ ods }}.record is null or {{ ods }}.record._corrupt_record is not null as is_unparseable,
        {{ ods }}._raw_line as raw_record,
        {{ ods }}._source_file,
        {{ ods }}._source_line,
        {{ ods }}._is_redelivery,
        {{ ods }}._batch_id,
        {{ ods }}._load_id,
        {{ ods }}._loaded_at
{%- endmacro %}
