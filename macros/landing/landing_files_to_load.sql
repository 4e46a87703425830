{#- The load ledger's question, asked before an ODS model's SQL runs: which landed files of
    this source may this run load? A file qualifies when
      - its name is visible (writers write under hidden names and rename when done),
      - its batch folder holds the completion marker `_SUCCESS` (Spark cannot list that name:
        lakehouse.LandingFolders asks Hadoop, see scripts/java/), and
      - the ODS table holds no line of it yet (the ledger: ODS rows carry their file).
    Files waiting for their marker are logged and listed by ods_landing__files. Returns the
    paths as Spark lists them (URIs); the model filters the landing table on them as literals,
    so Spark reads only those files. -#}
{% macro landing_files_to_load(source_name, table_name) %}
    {%- set listing = source(source_name, table_name ~ '_files') -%}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {%- if adapter.get_relation(listing.database, listing.schema, listing.identifier) is none -%}
        {#- a command without on-run-start (compile, a linter's compile) on a fresh warehouse -#}
        {{ log("landing " ~ source_name ~ "." ~ table_name ~ ": not registered in this command, nothing to load", info=true) }}
        {{ return([]) }}
    {%- endif -%}
    {%- do run_query('refresh table ' ~ listing) -%}
    {%- do run_query('refresh table ' ~ source(source_name, table_name)) -%}
    {%- set query -%}
        with listed as (
            select
                path as file_path,
                regexp_extract(path, '^(.*)/[^/]+$', 1) as folder
            from {{ listing }}
        ),

        folders as (
            select
                folder,
                cast(reflect('lakehouse.LandingFolders', 'isComplete', folder) as boolean) as is_complete
            from (select distinct folder from listed)
        )

        select listed.file_path, folders.is_complete
        from listed
        inner join folders on listed.folder = folders.folder
        {%- if is_incremental() %}
        left anti join (select distinct _source_file from {{ this }}) as loaded
            on listed.file_path = loaded._source_file
        {%- endif %}
        order by listed.file_path
    {%- endset -%}
    {%- set to_load, waiting = [], [] -%}
    {%- for row in run_query(query).rows -%}
        {%- do (to_load if row[1] else waiting).append(row[0]) -%}
    {%- endfor -%}
    {%- if waiting -%}
        {{ log("landing " ~ source_name ~ "." ~ table_name ~ ": " ~ (waiting | length)
            ~ " file(s) wait for their batch's _SUCCESS marker, not loaded: " ~ (waiting[:5] | join(', '))
            ~ (" ..." if waiting | length > 5 else ""), info=true) }}
    {%- endif -%}
    {{ log("landing " ~ source_name ~ "." ~ table_name ~ ": " ~ (to_load | length) ~ " new file(s) to load", info=true) }}
    {{ return(to_load) }}
{% endmacro %}

{#- `column in (<paths as literals>)`, or false when there is nothing to load -#}
{% macro landing_file_filter(column, paths) %}
    {%- if not paths -%}false{%- else -%}
        {{ column }} in (
            {%- for path in paths %}
            '{{ path | replace("\\", "\\\\") | replace("'", "\\'") }}'{{ ',' if not loop.last }}
            {%- endfor %}
        )
    {%- endif -%}
{% endmacro %}
