{#- The load ledger's question, asked before an ODS model's SQL runs: which landed files of
    this source may this run load? A file qualifies when
      - its name is visible (writers write under hidden names and rename when done),
      - its batch folder holds the completion marker `_SUCCESS` (Spark cannot list that name:
        lakehouse.LandingFolders asks Hadoop, see dbt/include/lakehouse/java/), and
      - the ODS table holds no line of it yet (the ledger: ODS rows carry their file), and
        no retention expired its lines (the compact ledger, expired_load_ledger).
    Only the batch folders (`batch=<digits>`) changed since the last load's listing are
    listed: adding a file or the marker to a folder changes its modification time, so a file
    renamed into an old folder, or a marker written late, brings its folder back
    (landing_listing_since). They are added as partitions of the landing tables, so Spark
    lists those folders alone, and the ledger reads only their loads in ODS. A run that finds
    no changed folder reads nothing of the landing zone or of ODS.
    Files waiting for their marker are logged and listed by ods_landing__files.
    Returns {files: paths as Spark lists them (URIs), listed_at_ms: when this listing began
    (stored with the load as `_listed_at`), batches: the batch ids of the files' folders (the
    model reads those partitions and filters them on the paths as literals)}. -#}
{% macro landing_files_to_load(source_name, table_name) %}
    {%- set nothing = {'files': [], 'listed_at_ms': none, 'batches': []} -%}
    {%- if not execute -%}{{ return(nothing) }}{%- endif -%}
    {%- set landing = source(source_name, table_name) -%}
    {%- set listing = source(source_name, table_name ~ '_files') -%}
    {#- registered by this invocation's on-run-start (then in dbt's relation cache), or looked
        up (a schema listing) -#}
    {%- if adapter.get_relation(listing.database, listing.schema, listing.identifier) is none -%}
        {#- a command without on-run-start (compile, a linter's compile) on a fresh warehouse -#}
        {{ log("landing " ~ source_name ~ "." ~ table_name ~ ": not registered in this command, nothing to load", info=true) }}
        {{ return(nothing) }}
    {%- endif -%}
    {%- set root = landing_source_location(source_name, table_name).rstrip('/') -%}
    {%- set since = landing_listing_since() -%}
    {%- set answer = run_query(
        "select reflect('lakehouse.LandingFolders', 'changedFolders', '"
        ~ _sql_string(root) ~ "', cast(" ~ since ~ " as bigint))").rows[0][0] -%}
    {%- set lines = answer.split('\n') -%}
    {%- set listed_at_ms = lines[0].split('\t')[1] | int -%}
    {%- set complete, not_batches = {}, [] -%}
    {%- for line in lines[1:] -%}
        {%- set fields = line.split('\t') -%}
        {%- set match = modules.re.fullmatch('batch=([0-9]+)', fields[0]) -%}
        {%- if match -%}
            {%- do complete.update({match.group(1): fields[1] == '1'}) -%}
        {%- else -%}
            {%- do not_batches.append(fields[0]) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not_batches -%}
        {{ log("landing " ~ source_name ~ "." ~ table_name ~ ": WARNING folder(s) not named batch=<digits>, never loaded: "
            ~ (not_batches[:5] | join(', ')), info=true) }}
    {%- endif -%}
    {{ log("landing " ~ source_name ~ "." ~ table_name ~ ": " ~ (complete | length) ~ " batch folder(s) with files "
        ~ ("in all" if since == 0 else "changed since the last load's listing"), info=true) }}
    {%- if not complete -%}
        {{ return({'files': [], 'listed_at_ms': listed_at_ms, 'batches': []}) }}
    {%- endif -%}

    {#- the changed folders become partitions of the landing tables, which Spark then lists alone -#}
    {%- set partitions = [] -%}
    {%- for batch in complete -%}
        {%- do partitions.append("partition (batch = '" ~ batch ~ "')") -%}
    {%- endfor -%}
    {%- for table in [landing, listing] -%}
        {%- do run_query('alter table ' ~ table ~ ' add if not exists ' ~ partitions | join(' ')) -%}
    {%- endfor -%}
    {%- set batch_list = "'" ~ complete.keys() | join("', '") ~ "'" -%}
    {%- set expired = expired_load_ledger() if is_incremental() else none -%}
    {%- set query -%}
        select listed.path, listed.batch, listed.length
        from {{ listing }} as listed
        where listed.batch in ({{ batch_list }})
        {%- if is_incremental() %}
        and listed.path not in (
            -- the changed folders' loads only: Iceberg skips files by their _batch_id bounds
            select loaded._source_file from {{ this }} as loaded
            where loaded._batch_id in ({{ batch_list }})
            {%- if expired is not none %}
            union all
            -- and the files whose lines retention expired (the compact ledger)
            select expired.source_file from {{ expired }} as expired
            where
                expired.ods_table = '{{ expired_load_ledger_key(this) }}'
                and expired.batch_id in ({{ batch_list }})
            {%- endif %}
        )
        {%- endif %}
        order by listed.path
    {%- endset -%}
    {%- set to_load, waiting, batches, too_large = [], [], [], [] -%}
    {%- set limit = landing_max_file_bytes() -%}
    {%- for row in run_query(query).rows -%}
        {%- if complete.get(row[1], false) -%}
            {%- if row[2] is not none and row[2] > limit -%}
                {%- do too_large.append(row[0] ~ " (" ~ "{:,}".format(row[2]) ~ " bytes)") -%}
            {%- endif -%}
            {%- do to_load.append(row[0]) -%}
            {%- if row[1] not in batches -%}{%- do batches.append(row[1]) -%}{%- endif -%}
        {%- else -%}
            {%- do waiting.append(row[0]) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if waiting -%}
        {{ log("landing " ~ source_name ~ "." ~ table_name ~ ": " ~ (waiting | length)
            ~ " file(s) wait for their batch's _SUCCESS marker, not loaded: " ~ (waiting[:5] | join(', '))
            ~ (" ..." if waiting | length > 5 else ""), info=true) }}
    {%- endif -%}
    {%- if too_large -%}
        {{ exceptions.raise_compiler_error("landing " ~ source_name ~ "." ~ table_name ~ ": " ~ (too_large | length)
            ~ " landed file(s) above the limit of " ~ "{:,}".format(limit) ~ " bytes for one file (var landing_max_file_bytes): "
            ~ (too_large[:5] | join(', ')) ~ (" ..." if too_large | length > 5 else "") ~ ". Nothing of this source was"
            ~ " loaded. The limit is a guard against a runaway file (a writer that never rolls its file), not a memory"
            ~ " limit: ODS reads a file in splits over all cores. Raise it for a file that is meant to be this large, or"
            ~ " split the file into smaller ones in its batch folder (it was never loaded, so no line is loaded twice);"
            ~ " docs/configuration.md.") }}
    {%- endif -%}
    {{ log("landing " ~ source_name ~ "." ~ table_name ~ ": " ~ (to_load | length) ~ " new file(s) to load", info=true) }}
    {{ return({'files': to_load, 'listed_at_ms': listed_at_ms, 'batches': batches}) }}
{% endmacro %}

{#- The largest landed file an ODS model reads (bytes, var landing_max_file_bytes). ODS reads
    a file line by line in splits (spark.sql.files.maxPartitionBytes, 128 MiB), so a task
    holds one split's lines, whatever the file's size: the limit is a guard against a writer
    that never rolls its file (a run's cost and shuffle follow the file), not a memory limit.
    What remains bounded by memory is one line (a Java string, under 2 GiB). Default 16 GiB. -#}
{% macro landing_max_file_bytes() %}
    {%- set limit = var('landing_max_file_bytes') -%}
    {%- if limit is not number or limit < 1 -%}
        {{ exceptions.raise_compiler_error("var landing_max_file_bytes must be a positive number of bytes, got " ~ limit) }}
    {%- endif -%}
    {{ return(limit | int) }}
{% endmacro %}

{#- A value inside a single-quoted Spark SQL string -#}
{% macro _sql_string(text) %}
    {{ return(text | replace('\\', '\\\\') | replace("'", "\\'")) }}
{% endmacro %}

{#- `column in (<paths as literals>)`, or false when there is nothing to load -#}
{% macro landing_file_filter(column, paths) %}
    {%- if not paths -%}false{%- else -%}
        {{ column }} in (
            {%- for path in paths %}
            '{{ _sql_string(path) }}'{{ ',' if not loop.last }}
            {%- endfor %}
        )
    {%- endif -%}
{% endmacro %}
