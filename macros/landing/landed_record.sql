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

{#- The ODS lines of a landing source, each parsed once: `landed_fields`, the
    line as a JSON object of every field it carries, and `record`, the fields the source
    declares taken from it (landed_record). The fields the line carries, declared or not, are
    what schema drift counts (ods_landing__fields_by_load, from the typed model's
    _undeclared_fields and _absent_fields), so no model parses the line a second time. -#}
{% macro parsed_landed_lines(source_name, table_name, ods_relation) %}
    select
        *,
        {{ landed_record(source_name, table_name) }} as record
    -- the parse in a projection of its own: Spark keeps one parse for its several uses
    from (  -- noqa: ST05
        select
            *,
            from_json(_raw_line, 'map<string, string>') as landed_fields
        from {{ ods_relation }}
    ) as landed
{% endmacro %}

{#- The record of a landed line (every field a string: typing and validation belong to DWD):
    each declared field from the line's parsed `landed_fields`, and `_corrupt_record`, which
    holds the line when it is no JSON object. A field added upstream stays in the raw line
    until the source declares it; then the next run takes it from every line already in ODS,
    without a reload. A line that repeats a key is parsed again by field, so the key's last
    value wins, as everywhere else (a map lookup finds the first). -#}
{% macro landed_record(source_name, table_name) %}
    {%- set names = landed_field_names(source_name, table_name) -%}
    {%- set by_field = [] -%}
    {%- set declared = [] -%}
    {%- for name in names -%}
        {%- do by_field.append("'" ~ name ~ "', landed_fields['" ~ name ~ "']") -%}
        {%- do declared.append(name ~ ' string') -%}
    {%- endfor -%}
    case
        when landed_fields is null then named_struct(
            {%- for name in names %}'{{ name }}', cast(null as string), {% endfor -%}
            '_corrupt_record', _raw_line)
        when size(landed_fields) > size(array_distinct(map_keys(landed_fields))) then from_json(
            _raw_line,
            '{{ (declared + ['_corrupt_record string']) | join(", ") }}',
            map('mode', 'PERMISSIVE', 'columnNameOfCorruptRecord', '_corrupt_record')
        )
        else named_struct({{ by_field | join(', ') }}, '_corrupt_record', cast(null as string))
    end
{%- endmacro %}

{#- Which fields a parsed landed line carries, against what its source declares: the fields
    it carries that no one declares, and the declared ones it lacks (null when the line is no
    JSON object). Usually both are empty: what the run's cache of typed rows holds for schema
    drift stays small. -#}
{% macro landed_field_columns(source_name, table_name, ods='ods') -%}
    {%- set declared = 'array(' ~ _quoted(landed_field_names(source_name, table_name)) ~ ')' -%}
    array_except(map_keys({{ ods }}.landed_fields), {{ declared }}) as _undeclared_fields,
        array_except({{ declared }}, map_keys({{ ods }}.landed_fields)) as _absent_fields
{%- endmacro %}

{#- 'a', 'b', 'c': names as SQL string literals (a list for `in (...)`) -#}
{% macro _quoted(names) %}
    {%- for name in names -%}'{{ name }}'{{ ', ' if not loop.last }}{%- endfor -%}
{% endmacro %}
