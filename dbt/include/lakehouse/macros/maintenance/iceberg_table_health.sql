{#- The full health read, made only when the cheap read (iceberg_commit_summary) says a
    threshold may be passed, and by the nightly operation: the table's manifests, read through
    Iceberg's API in one call (lakehouse.TableHealth; no data file is opened, no query is
    planned). Detects the table's partitioning itself. Returns a dict; 'error' holds a failed
    read's message.
    A data file is "small" below 3/4 of the target file size; a partition is "crowded" when
    it holds at least `min_small_files` of them (what compaction acts on). A position-delete
    file is "surplus" when another one already covers the same data file (or, for
    partition-scoped deletes, the same partition): what rewrite_position_delete_files merges.
    A manifest is small below 3/4 of `manifest_target_bytes`. -#}
{% macro iceberg_table_health(relation, target_file_bytes=134217728, min_small_files=5, manifest_target_bytes=8388608) %}
    {%- set small = (target_file_bytes | int * 3 // 4) -%}
    {%- set small_manifest = (manifest_target_bytes | int * 3 // 4) -%}
    {%- set read = _maintenance_execute(
        "select reflect('lakehouse.TableHealth', 'read', '" ~ _iceberg_table_name(relation) ~ "', '"
        ~ small ~ "', '" ~ small_manifest ~ "', '" ~ (min_small_files | int) ~ "') from values (1)") -%}
    {%- if read.error -%}{{ return({'error': read.error}) }}{%- endif -%}
    {%- set health = fromjson(read.table.rows[0][0]) -%}
    {%- do health.update({'error': none}) -%}
    {{ return(health) }}
{% endmacro %}
