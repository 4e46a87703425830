{#- The full health read, made only when the cheap read (iceberg_commit_summary) says a
    threshold may be passed, and by the nightly operation: one query over the `files` and
    `manifests` metadata tables (manifests are read, no data file is opened). Detects the
    table's partitioning itself. Returns a dict; 'error' holds a failed read's message.
    A data file is "small" below 3/4 of the target file size; a partition is "crowded" when
    it holds at least `min_small_files` of them (what compaction acts on). A position-delete
    file is "surplus" when another one already covers the same data file (or, for
    partition-scoped deletes, the same partition): what rewrite_position_delete_files merges.
    A manifest is small below 3/4 of `manifest_target_bytes`. -#}
{% macro iceberg_table_health(relation, target_file_bytes=134217728, min_small_files=5, manifest_target_bytes=8388608) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {%- set partitioned = iceberg_table_partitioned(relation) -%}
    {%- if partitioned is string -%}{{ return({'error': partitioned}) }}{%- endif -%}
    {%- set small = (target_file_bytes | int * 3 // 4) -%}
    {%- set small_manifest = (manifest_target_bytes | int * 3 // 4) -%}
    {#- a position-delete file whose file_path bounds are equal references one data file -#}
    {%- set path_field = 2147483546 -%}
    {%- set query -%}
        with files as (
            select
                content,
                file_size_in_bytes,
                record_count,
                {{ 'to_json(partition)' if partitioned else "''" }} as partition_key,
                coalesce(referenced_data_file,
                    case when lower_bounds[{{ path_field }}] = upper_bounds[{{ path_field }}]
                        then hex(lower_bounds[{{ path_field }}]) end) as referenced_file
            from {{ table_name }}.files
        ),
        partitions as (
            select count_if(content = 0 and file_size_in_bytes < {{ small }}) as small_files
            from files
            group by partition_key
        ),
        file_stats as (
            select
                count_if(content = 0) as data_files,
                coalesce(sum(case when content = 0 then file_size_in_bytes end), 0) as data_bytes,
                count_if(content = 0 and file_size_in_bytes < {{ small }}) as small_files,
                count_if(content = 1) as position_delete_files,
                count_if(content = 2) as equality_delete_files,
                count(distinct case when content = 1 then coalesce(referenced_file, partition_key) end)
                    as position_delete_targets,
                coalesce(sum(case when content = 0 then record_count end), 0) as data_records,
                coalesce(sum(case when content > 0 then record_count end), 0) as deleted_records
            from files
        ),
        manifest_stats as (
            select count(*) as manifests, count_if(length < {{ small_manifest }}) as small_manifests
            from {{ table_name }}.manifests
        )
        select
            file_stats.*,
            file_stats.position_delete_files - file_stats.position_delete_targets as surplus_position_delete_files,
            (select coalesce(max(small_files), 0) from partitions) as max_small_files_in_partition,
            (select count_if(small_files >= {{ min_small_files | int }}) from partitions) as crowded_partitions,
            (select coalesce(sum(case when small_files >= {{ min_small_files | int }} then small_files end), 0)
             from partitions) as crowded_small_files,
            manifest_stats.*,
            unix_millis(current_timestamp()) as checked_at_ms
        from file_stats
        cross join manifest_stats
    {%- endset -%}
    {%- set read = _maintenance_execute(query) -%}
    {%- if read.error -%}{{ return({'error': read.error}) }}{%- endif -%}
    {%- set health = _maintenance_row(read.table) -%}
    {%- do health.update({'error': none, 'partitioned': partitioned}) -%}
    {{ return(health) }}
{% endmacro %}
