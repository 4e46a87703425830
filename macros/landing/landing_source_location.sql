{#- The landing folder of a source (`meta.landing_folder` below landing_dir()), as
    register_landing_sources registers it -#}
{% macro landing_source_location(source_name, table_name) %}
    {%- for node in graph.sources.values()
        if node.source_name == source_name and node.name == table_name -%}
        {%- if not node.meta.get('landing_folder') -%}
            {{ exceptions.raise_compiler_error("source " ~ source_name ~ "." ~ table_name ~ " has no meta.landing_folder") }}
        {%- endif -%}
        {{ return(landing_dir().rstrip('/') ~ '/' ~ node.meta['landing_folder']) }}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error("no source " ~ source_name ~ "." ~ table_name) }}
{% endmacro %}
