{#- The schema of the platform's own tables (the run lock, the run records), named in one
    place: the `ops` schema as this project's generate_schema_name names it, trimmed (a
    generate_schema_name written with plain `{{ }}` renders newlines and indentation around
    the name, which dbt strips for a model's schema). The name goes into SQL text and the
    helpers' Java calls, so anything but a plain identifier stops the run, naming it: a
    platform table that cannot be found must never be skipped quietly. -#}
{% macro platform_schema() %}
    {%- set schema = generate_schema_name('ops', none) | trim -%}
    {%- if not modules.re.fullmatch('[A-Za-z0-9_]+', schema) -%}
        {{ exceptions.raise_compiler_error("the platform's schema, generate_schema_name('ops', none), must be a plain"
            ~ " name (letters, digits, underscores), got '" ~ schema ~ "': the run lock and the run records live there") }}
    {%- endif -%}
    {{ return(schema) }}
{% endmacro %}
