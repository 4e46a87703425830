{#- The SQL of a landing source's typed model, rendered as that model renders it: a changelog
    (`meta.changelog_key`) by typed_changelog, any other source by the project's macro
    `typed_<source>__<table>` (typed_client__events). None unless the typed model's code is
    that one call (its config and comments aside): a model with SQL of its own, or more than
    the call, would be cached as something other than what its readers read. -#}
{% macro typed_landing_rows(source) %}
    {%- set args = "('" ~ source.source_name ~ "','" ~ source.table_name ~ "')" -%}
    {%- set call = 'typed_changelog' ~ args if source.changelog_key
        else 'typed_' ~ source.source_name ~ '__' ~ source.table_name ~ '()' -%}
    {%- if _typed_model_code(source.typed) != call -%}{{ return(none) }}{%- endif -%}
    {%- if source.changelog_key -%}
        {{ return(typed_changelog(source.source_name, source.table_name)) }}
    {%- endif -%}
    {%- set render = context.get('typed_' ~ source.source_name ~ '__' ~ source.table_name) -%}
    {{ return(render() if render is not none else none) }}
{% endmacro %}

{#- A model's code without its comments, its config call, braces and whitespace, double
    quotes as single: typed_changelog('appdb','user_changes'). (The patterns spell braces as
    character classes: dbt's macro reader would take a literal one for a tag.) -#}
{% macro _typed_model_code(model_name) %}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.name == model_name -%}
        {%- set code = modules.re.sub('(?s)[{][#].*?[#][}]', '', node.raw_code) -%}
        {%- set code = modules.re.sub('(?s)[{][{]\s*config\(.*?\)\s*[}][}]', '', code) -%}
        {{ return(modules.re.sub('[\s{}]', '', code).replace('"', "'")) }}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}
