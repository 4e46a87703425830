{#- Registers every source whose `meta.landing_folder` is set as an unmanaged table over that
    folder of the landing zone (landing_dir(): a URI or a path, passed on unchanged),
    partitioned by its batch folders (`batch=<id>`):
      landing_format 'text'        one row per line, lines ended by '\n' alone (a '\r' stays
                                   in its line), every landed line kept raw, fields declared
                                   or not; read in splits, so a file of any size is spread
                                   over the cores (ods_landed_lines numbers the lines);
      landing_format 'binaryFile'  one row per file: path, size, modification time, without
                                   reading the content (the load ledger's listing).
    A registration finds the batch folders there are (`recover partitions`); an ODS run adds
    the folders changed since (landing_files_to_load), so Spark lists only the partitions a
    query asks for.
    Runs on every `on-run-start`. A table whose location, format or options changed since it
    was registered is dropped (metadata only: the files stay) and registered again. -#}
{% macro register_landing_sources() %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set landing_root = landing_dir() -%}
    {%- set columns = {
        'text': "(value string, batch string) using text options (lineSep '\\n')",
        'binaryFile': "(path string, modificationTime timestamp, length bigint, content binary, batch string) using binaryFile",
    } -%}
    {%- set registered = [] -%}
    {#- schema -> {table: its registration fingerprint or none}: one listing per schema, not a
        statement per source -#}
    {%- set existing = {} -%}
    {%- for node in graph.sources.values() if node.meta.get('landing_folder') and node.schema not in existing -%}
        {%- do run_query('create schema if not exists ' ~ node.schema) -%}
        {%- set tables = {} -%}
        {%- for row in run_query("show table extended in " ~ node.schema ~ " like '*'").rows
              if (row[2] | string | lower) != 'true' -%}  {#- not the session's temporary views -#}
            {%- set found = modules.re.search('lakehouse\\.registration=([^,\\]\\s]+)', row[3]) -%}
            {%- do tables.update({row[1] | lower: found.group(1) if found else none}) -%}
        {%- endfor -%}
        {%- do existing.update({node.schema: tables}) -%}
    {%- endfor -%}
    {%- for node in graph.sources.values() if node.meta.get('landing_folder') -%}
        {%- set format = node.meta.get('landing_format', 'text') -%}
        {%- if format not in columns -%}
            {{ exceptions.raise_compiler_error(
                "landing source " ~ node.source_name ~ "." ~ node.name ~ ": landing_format must be one of "
                ~ (columns.keys() | list) ~ ", got " ~ format) }}
        {%- endif -%}
        {%- set location = landing_source_location(node.source_name, node.name) -%}
        {%- set ddl = columns[format] ~ " partitioned by (batch) location '" ~ location ~ "'" -%}
        {%- set fingerprint = local_md5(ddl) -%}
        {%- set table = node.schema ~ '.' ~ node.identifier -%}
        {%- set current = existing[node.schema].get(node.identifier | lower) -%}
        {%- if current != fingerprint -%}
            {%- do run_query('drop table if exists ' ~ table) -%}
            {%- do run_query('create table ' ~ table ~ ' ' ~ ddl
                ~ " tblproperties ('lakehouse.registration' = '" ~ fingerprint ~ "')") -%}
            {%- set found = run_query("select reflect('lakehouse.LandingFolders', 'exists', '"
                ~ _sql_string(location) ~ "')").rows[0][0] -%}
            {%- if found == 'true' -%}
                {%- do run_query('alter table ' ~ table ~ ' recover partitions') -%}
            {%- endif -%}
            {%- do registered.append(table) -%}
        {%- endif -%}
    {%- endfor -%}
    {#- dbt's relation cache now holds the landing schemas whole: an ODS model finds its
        tables there (landing_files_to_load) without listing the schema again -#}
    {%- for schema, tables in existing.items() -%}
        {%- for name in tables -%}
            {%- do adapter.cache_added(api.Relation.create(schema=schema, identifier=name, type='table')) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- for table in registered -%}
        {%- set schema, name = table.split('.') -%}
        {%- do adapter.cache_added(api.Relation.create(schema=schema, identifier=name, type='table')) -%}
    {%- endfor -%}
    {{ log("landing zone " ~ landing_root ~ (": registered " ~ (registered | join(', ')) if registered else ": sources up to date"), info=true) }}
{% endmacro %}
