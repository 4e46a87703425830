{#- The SQL of a landing source's typed model, rendered as that model renders it: a changelog
    (`meta.changelog_key`) by typed_changelog, any other source by the project's macro
    `typed_<source>__<table>` (typed_client__events). None when there is no such macro: the
    typed model is then SQL of its own, which dwd_landing__typed_rows cannot render. -#}
{% macro typed_landing_rows(source) %}
    {%- if source.changelog_key -%}
        {{ return(typed_changelog(source.source_name, source.table_name)) }}
    {%- endif -%}
    {%- set render = context.get('typed_' ~ source.source_name ~ '__' ~ source.table_name) -%}
    {{ return(render() if render is not none else none) }}
{% endmacro %}
