{#- CALL system.rewrite_position_delete_files: merges small position-delete files and, with
    `rewrite-all` or after a data compaction, drops deletes whose data files are gone. -#}
{% macro rewrite_position_delete_files(relation, options={}) %}
    {{ return(adapter.dispatch('rewrite_position_delete_files')(relation, options)) }}
{% endmacro %}

{% macro lakehouse__rewrite_position_delete_files(relation, options) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {%- set merged = _iceberg_options({}, options, 'rewrite_position_delete_files', [
        'rewrite-all', 'min-input-files', 'target-file-size-bytes', 'min-file-size-bytes',
        'max-file-size-bytes', 'max-file-group-size-bytes', 'partial-progress.enabled',
        'partial-progress.max-commits', 'max-concurrent-file-group-rewrites',
        'rewrite-job-order']) -%}
    call spark_catalog.system.rewrite_position_delete_files(
        table => '{{ table_name }}'
        {%- if merged %},
        options => {{ _iceberg_options_map(merged) }}
        {%- endif %}
    )
{% endmacro %}
