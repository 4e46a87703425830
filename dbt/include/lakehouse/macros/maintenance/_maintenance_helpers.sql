{#- Private helpers of iceberg_maintain and its parts. -#}

{#- Said before a procedure runs, so that the debug log shows that the model's own write
    had already committed when maintenance started. -#}
{% macro _maintenance_starting(relation, step) %}
    {{ log("running " ~ step ~ " on " ~ relation ~ " (maintenance: the model's own write is already committed)", info=false) }}
{% endmacro %}

{#- A step's config minus the thresholds that only steer the decision. -#}
{% macro _maintenance_args(step_config, thresholds, relation, step) %}
    {%- if step_config is not mapping -%}
        {{ exceptions.raise_compiler_error("maintenance of " ~ relation ~ ": " ~ step ~ " must be a mapping of arguments, got " ~ step_config) }}
    {%- endif -%}
    {%- set args = {} -%}
    {%- for name, value in step_config.items() if name not in thresholds -%}
        {%- do args.update({name: value}) -%}
    {%- endfor -%}
    {{ return(args) }}
{% endmacro %}

{#- A threshold from a step's config: a number (config values rendered from vars arrive as
    text) or a compile error naming it. -#}
{% macro _maintenance_threshold(step_config, name, default, relation, step) %}
    {%- set value = step_config.get(name, default) | float(-1) -%}
    {%- if not (value >= 0) -%}
        {{ exceptions.raise_compiler_error("maintenance of " ~ relation ~ ": " ~ step ~ "." ~ name ~ " must be a number >= 0, got " ~ step_config.get(name)) }}
    {%- endif -%}
    {{ return(value) }}
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
