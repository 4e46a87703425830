{#- The fields a landing source declares in its yml (its columns but `_corrupt_record`). -#}
{% macro landed_field_names(source_name, table_name) %}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}{#- the graph is not built while parsing -#}
    {%- set fields = [] -%}
    {%- for node in graph.sources.values() if node.source_name == source_name and node.name == table_name -%}
        {%- for column in node.columns if column != '_corrupt_record' -%}
            {%- do fields.append(column) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- if not fields -%}
        {{ exceptions.raise_compiler_error("no declared fields for landing source " ~ source_name ~ "." ~ table_name) }}
    {%- endif -%}
    {{ return(fields) }}
{% endmacro %}

{#- The landed line `_raw_line` parsed as a JSON object with the fields the source declares
    (every field a string: typing and validation belong to DWD), plus `_corrupt_record`,
    which holds the line when it is not JSON. A field added upstream stays in the raw line
    until the source declares it; then the next run parses it from every line already in
    ODS, without a reload. -#}
{% macro landed_record(source_name, table_name) %}
    {%- set fields = [] -%}
    {%- for name in landed_field_names(source_name, table_name) + ['_corrupt_record'] -%}
        {%- do fields.append(name ~ ' string') -%}
    {%- endfor -%}
    from_json(
        _raw_line,
        '{{ fields | join(", ") }}',
        map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt_record')
    )
{%- endmacro %}

{#- 'a', 'b', 'c': names as SQL string literals (a list for `in (...)`) -#}
{% macro _quoted(names) %}
    {%- for name in names -%}'{{ name }}'{{ ', ' if not loop.last }}{%- endfor -%}
{% endmacro %}
