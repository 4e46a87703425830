{#- Registers every source whose `meta.landing_folder` is set as an unmanaged JSON table
    over that folder of the landing zone, with the columns and types declared in its yml.
    Runs on every `on-run-start`, so new batch folders are seen by the run that follows. -#}
{% macro register_landing_sources() %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set landing_root = landing_dir() -%}
    {%- set statements = [] -%}
    {%- for node in graph.sources.values() if node.meta.get('landing_folder') -%}
        {%- if not node.columns -%}
            {{ exceptions.raise_compiler_error(
                "landing source " ~ node.source_name ~ "." ~ node.name ~ " declares no columns") }}
        {%- endif -%}
        {%- set location = landing_root ~ '/' ~ node.meta['landing_folder'] -%}
        {%- do statements.append('create schema if not exists ' ~ node.schema) -%}
        {%- set ddl -%}
            create table if not exists {{ node.schema }}.{{ node.identifier }} (
                {%- for column in node.columns.values() %}
                {{ column.name }} {{ column.data_type or 'string' }}{{ ',' if not loop.last }}
                {%- endfor %}
            )
            using json
            options (recursiveFileLookup 'true', mode 'PERMISSIVE')
            location '{{ location }}'
        {%- endset -%}
        {%- do statements.append(ddl) -%}
        {#- a long-lived session caches file listings; new batches must be visible -#}
        {%- do statements.append('refresh table ' ~ node.schema ~ '.' ~ node.identifier) -%}
    {%- endfor -%}
    {%- for statement in statements -%}
        {%- do run_query(statement) -%}
    {%- endfor -%}
    {{ log("registered " ~ (statements | length // 3) ~ " landing sources under " ~ landing_root, info=true) }}
{% endmacro %}
