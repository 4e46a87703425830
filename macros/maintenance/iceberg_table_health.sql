{#- One metadata read (files, manifests, snapshots metadata tables; no data file is
    opened) that says how healthy an Iceberg table is. Returns a dict. A data file is
    "small" below 3/4 of the target file size; a partition is "crowded" when it holds at
    least `min_small_files` of them (what compaction acts on). -#}
{% macro iceberg_table_health(relation, target_file_bytes=134217728, partitioned=false, min_small_files=5) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {%- set small = (target_file_bytes | int * 3 // 4) -%}
    {%- set query -%}
        with files as (
            select
                content,
                file_size_in_bytes,
                record_count,
                {{ 'to_json(partition)' if partitioned else "''" }} as partition_key
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
                coalesce(sum(case when content = 0 then record_count end), 0) as data_records,
                coalesce(sum(case when content > 0 then record_count end), 0) as deleted_records
            from files
        ),
        snapshot_stats as (
            select
                count(*) as snapshots,
                cast((unix_millis(current_timestamp()) - unix_millis(min(committed_at))) / 3600000.0 as double)
                    as oldest_snapshot_age_hours
            from {{ table_name }}.snapshots
        )
        select
            file_stats.*,
            (select coalesce(max(small_files), 0) from partitions) as max_small_files_in_partition,
            (select count_if(small_files >= {{ min_small_files | int }}) from partitions) as crowded_partitions,
            (select coalesce(sum(case when small_files >= {{ min_small_files | int }} then small_files end), 0)
             from partitions) as crowded_small_files,
            (select count(*) from {{ table_name }}.manifests) as manifests,
            snapshot_stats.*
        from file_stats
        cross join snapshot_stats
    {%- endset -%}
    {%- set table = run_query(query) -%}
    {%- set health = {} -%}
    {%- for column in table.column_names -%}
        {%- set value = table.columns[column].values()[0] -%}
        {%- do health.update({column: (value if value is not none else 0)}) -%}
    {%- endfor -%}
    {{ return(health) }}
{% endmacro %}
