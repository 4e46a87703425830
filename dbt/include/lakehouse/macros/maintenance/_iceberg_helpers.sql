{#- Private helpers of the maintenance macros: validate what they are given, so that no
    argument reaches SQL unchecked (predicates are checked by _safe_predicate). -#}

{% macro _iceberg_identifiers(columns, what='column') %}
    {%- set columns = [columns] if columns is string else columns -%}
    {%- for column in columns -%}
        {%- if not modules.re.fullmatch('[A-Za-z_][A-Za-z0-9_]*', column | string) -%}
            {{ exceptions.raise_compiler_error("'" ~ column ~ "' is not a " ~ what ~ " identifier") }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}

{% macro _iceberg_table_name(relation) %}
    {%- if relation is string or not relation.identifier -%}
        {{ exceptions.raise_compiler_error("maintenance macros take a relation (this, ref(...)), got: " ~ relation) }}
    {%- endif -%}
    {%- do _iceberg_identifiers([relation.schema, relation.identifier], 'schema or table') -%}
    {{ return(relation.schema ~ '.' ~ relation.identifier) }}
{% endmacro %}

{#- "user_id" or ["user_id desc", "video_id"] -> "user_id ASC NULLS LAST, ..." -#}
{% macro _iceberg_sort_order(sort_order) %}
    {%- set terms = [sort_order] if sort_order is string else sort_order -%}
    {%- set rendered = [] -%}
    {%- for term in terms -%}
        {%- set parts = term.split() if term is string else [] -%}
        {%- if parts -%}
            {%- do _iceberg_identifiers(parts[0]) -%}
        {%- endif -%}
        {%- set direction = (parts[1] if parts | length > 1 else 'asc') | upper -%}
        {%- if parts | length not in [1, 2] or direction not in ['ASC', 'DESC'] -%}
            {{ exceptions.raise_compiler_error("sort term '" ~ term ~ "' must be '<column> [asc|desc]'") }}
        {%- endif -%}
        {%- do rendered.append(parts[0] ~ ' ' ~ direction ~ ' NULLS LAST') -%}
    {%- endfor -%}
    {{ return(rendered | join(', ')) }}
{% endmacro %}

{#- Options are rendered inside '...': names must be known, values plain (no quoting
    to escape, nothing stripped silently). -#}
{% macro _iceberg_options(defaults, options, procedure, known) %}
    {%- set merged = {} -%}
    {%- for name, value in defaults.items() -%}
        {%- do merged.update({name: _iceberg_option_value(procedure, name, value)}) -%}
    {%- endfor -%}
    {%- for name, value in (options or {}).items() -%}
        {%- if name not in known -%}
            {{ exceptions.raise_compiler_error(procedure ~ ": unknown option '" ~ name ~ "'; known: " ~ (known | join(', '))) }}
        {%- endif -%}
        {%- do merged.update({name: _iceberg_option_value(procedure, name, value)}) -%}
    {%- endfor -%}
    {{ return(merged) }}
{% endmacro %}

{#- true/false, a number, or a simple name or size such as bytes-asc or 512MB. -#}
{% macro _iceberg_option_value(procedure, name, value) %}
    {%- if value is boolean -%}
        {{ return(value | string | lower) }}
    {%- elif value is number or (value is string and modules.re.fullmatch('[A-Za-z0-9_.:-]+', value)) -%}
        {{ return(value | string) }}
    {%- endif -%}
    {{ exceptions.raise_compiler_error(procedure ~ ": option '" ~ name ~ "' has value '" ~ value
        ~ "'; values must be true/false, a number or a simple name (letters, digits, _ . : -)") }}
{% endmacro %}

{% macro _iceberg_options_map(options) -%}
    map({%- for name, value in options.items() -%}
        '{{ name }}', '{{ value }}'{{ ', ' if not loop.last }}
    {%- endfor -%})
{%- endmacro %}
