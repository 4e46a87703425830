{#- The cheap read every run makes: the table's properties (the current snapshot id and
    the checkpoint the last full health read left, see iceberg_maintenance_checkpoint) and
    one aggregate over the `snapshots` metadata table (the snapshot list in the table's
    metadata file; no manifest or data file is opened). Returns the current snapshot's
    summary counters (total-data-files, total-delete-files, total-position-deletes,
    total-equality-deletes, total-records, total-files-size), snapshot counts for expiry and
    an upper bound of the data files any one partition gained since the checkpoint.
    `expire_before`: a UTC datetime; snapshots older than it are counted apart. -#}
{% macro iceberg_commit_summary(relation, expire_before) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {%- set shown = _maintenance_execute('show tblproperties ' ~ table_name) -%}
    {%- if shown.error -%}{{ return({'error': shown.error}) }}{%- endif -%}
    {%- set properties = {} -%}
    {%- for row in shown.table.rows -%}
        {%- do properties.update({row[0]: row[1]}) -%}
    {%- endfor -%}
    {%- set current = properties.get('current-snapshot-id', 'none') | string -%}
    {%- if not modules.re.fullmatch('-?[0-9]+', current) -%}
        {{ return({'error': none, 'current_snapshot_id': none, 'properties': properties}) }}
    {%- endif -%}
    {%- set checked_ms = properties.get('lakehouse.maintenance.checked-at-ms', '-1') | int(-1) -%}
    {%- set counters = ['total-data-files', 'total-delete-files', 'total-position-deletes',
                        'total-equality-deletes', 'total-records', 'total-files-size'] -%}
    {%- set query -%}
        select
            count(*) as snapshots,
            cast((unix_millis(current_timestamp()) - unix_millis(min(committed_at))) / 3600000.0 as double)
                as oldest_snapshot_age_hours,
            count_if(committed_at < timestamp '{{ expire_before.strftime('%Y-%m-%d %H:%M:%S') }}') as snapshots_before_cutoff,
            count_if(unix_millis(committed_at) > {{ checked_ms }}) as snapshots_since_check,
            {#- an append (or a dynamic partition overwrite, which replaces exactly the
                partitions it writes) adds its files over changed-partition-count partitions,
                so one partition gains at most added - changed + 1; other operations: all added -#}
            coalesce(sum(case
                when unix_millis(committed_at) <= {{ checked_ms }} then 0
                when operation = 'append' or summary['replace-partitions'] = 'true'
                    then greatest(cast(summary['added-data-files'] as bigint)
                    - coalesce(cast(summary['changed-partition-count'] as bigint), 1) + 1, 0)
                else coalesce(cast(summary['added-data-files'] as bigint), 0)
            end), 0) as partition_files_added_bound,
            {%- for counter in counters %}
            coalesce(cast(first(case when snapshot_id = {{ current }} then summary['{{ counter }}'] end, true) as bigint), 0)
                as {{ counter | replace('-', '_') }}{{ ',' if not loop.last }}
            {%- endfor %}
        from {{ table_name }}.snapshots
    {%- endset -%}
    {%- set read = _maintenance_execute(query) -%}
    {%- if read.error -%}{{ return({'error': read.error}) }}{%- endif -%}
    {%- set summary = _maintenance_row(read.table) -%}
    {%- do summary.update({'error': none, 'current_snapshot_id': current | int, 'properties': properties,
                           'checked_at_ms': checked_ms}) -%}
    {{ return(summary) }}
{% endmacro %}
