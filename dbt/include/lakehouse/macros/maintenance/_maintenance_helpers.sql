{#- Private helpers of iceberg_maintain and its parts. -#}

{#- Said before a procedure runs, so that the debug log shows that the model's own write
    had already committed when maintenance started. -#}
{% macro _maintenance_starting(relation, step) %}
    {{ log("running " ~ step ~ " on " ~ relation ~ " (maintenance: the model's own write is already committed)", info=false) }}
{% endmacro %}

{% macro _first(table, column, default='?') %}
    {%- if table is not none and column in table.column_names and table.rows | length > 0 -%}
        {%- set value = table.columns[column].values()[0] -%}
        {{ return(default if value is none else value) }}
    {%- endif -%}
    {{ return(default) }}
{% endmacro %}

{#- One row of a result as a dict, nulls as 0 (counts and sums of empty tables). -#}
{% macro _maintenance_row(table) %}
    {%- set row = {} -%}
    {%- for column in table.column_names -%}
        {%- set value = table.columns[column].values()[0] if table.rows | length > 0 else none -%}
        {%- do row.update({column: (value if value is not none else 0)}) -%}
    {%- endfor -%}
    {{ return(row) }}
{% endmacro %}

{#- A Jinja value as a Spark SQL literal: strings escaped for '...', lists as arrays of
    strings, dicts as maps of string to double. -#}
{% macro _maintenance_literal(value) %}
    {%- if value is none -%}{{ return('null') }}
    {%- elif value is boolean -%}{{ return(value | string | lower) }}
    {%- elif value is number -%}{{ return(value | string) }}
    {%- elif value is mapping -%}
        {%- set pairs = [] -%}
        {%- for key, number in value.items() -%}
            {%- do pairs.append(_maintenance_literal(key | string) ~ ', cast(' ~ (number | float) ~ ' as double)') -%}
        {%- endfor -%}
        {{ return('map(' ~ (pairs | join(', ')) ~ ')' if pairs else 'cast(map() as map<string, double>)') }}
    {%- elif value is iterable and value is not string -%}
        {%- set items = [] -%}
        {%- for item in value -%}{%- do items.append(_maintenance_literal(item | string)) -%}{%- endfor -%}
        {{ return('array(' ~ (items | join(', ')) ~ ')' if items else 'cast(array() as array<string>)') }}
    {%- endif -%}
    {{ return("'" ~ (value | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") }}
{% endmacro %}
