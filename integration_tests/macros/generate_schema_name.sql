{#- An ordinary generate_schema_name, as many dbt projects write it: `<target schema>_<custom
    schema>`, rendered with the blank lines and indentation of plain `{% %}` tags around the
    name. dbt strips them for a model's schema; the adapter's platform schema
    (generate_schema_name('ops', none): the run lock, the run records, the maintenance log)
    must too. -#}
{% macro generate_schema_name(custom_schema_name, node) %}
    {% if custom_schema_name is none %}
        {{ target.schema }}
    {% else %}
        {{ target.schema }}_{{ custom_schema_name | trim }}
    {% endif %}
{% endmacro %}
