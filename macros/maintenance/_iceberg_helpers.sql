{#- Private helpers of the maintenance macros: validate what they are given. -#}

{% macro _iceberg_identifiers(columns) %}
    {%- set columns = [columns] if columns is string else columns -%}
    {%- for column in columns -%}
        {%- if not modules.re.fullmatch('[A-Za-z_][A-Za-z0-9_]*', column | string) -%}
            {{ exceptions.raise_compiler_error("'" ~ column ~ "' is not a column identifier") }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}

{% macro _iceberg_table_name(relation) %}
    {%- if relation is string or not relation.identifier -%}
        {{ exceptions.raise_compiler_error("maintenance macros take a relation (this, ref(...)), got: " ~ relation) }}
    {%- endif -%}
    {%- do _iceberg_identifiers([relation.schema, relation.identifier]) -%}
    {{ return(relation.schema ~ '.' ~ relation.identifier) }}
{% endmacro %}

{#- "user_id" or ["user_id desc", "video_id"] -> "user_id ASC NULLS LAST, ..." -#}
{% macro _iceberg_sort_order(sort_order) %}
    {%- set terms = [sort_order] if sort_order is string else sort_order -%}
    {%- set rendered = [] -%}
    {%- for term in terms -%}
        {%- set parts = term.split() -%}
        {%- do _iceberg_identifiers(parts[0]) -%}
        {%- set direction = (parts[1] if parts | length > 1 else 'asc') | upper -%}
        {%- if direction not in ['ASC', 'DESC'] or parts | length > 2 -%}
            {{ exceptions.raise_compiler_error("sort term '" ~ term ~ "' must be '<column> [asc|desc]'") }}
        {%- endif -%}
        {%- do rendered.append(parts[0] ~ ' ' ~ direction ~ ' NULLS LAST') -%}
    {%- endfor -%}
    {{ return(rendered | join(', ')) }}
{% endmacro %}

{% macro _iceberg_options(defaults, options, procedure, known) %}
    {%- set merged = {} -%}
    {%- do merged.update(defaults) -%}
    {%- for name, value in (options or {}).items() -%}
        {%- if name not in known -%}
            {{ exceptions.raise_compiler_error(procedure ~ ": unknown option '" ~ name ~ "'; known: " ~ (known | join(', '))) }}
        {%- endif -%}
        {%- do merged.update({name: (value | string | lower if value is boolean else value | string)}) -%}
    {%- endfor -%}
    {{ return(merged) }}
{% endmacro %}

{% macro _iceberg_options_map(options) -%}
    map({%- for name, value in options.items() -%}
        '{{ name }}', '{{ value | replace("'", "") }}'{{ ', ' if not loop.last }}
    {%- endfor -%})
{%- endmacro %}
