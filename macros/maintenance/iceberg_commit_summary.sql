{#- The cheap read every run makes: the table's properties (the current snapshot id and
    the checkpoint the last full health read left, see iceberg_maintenance_checkpoint) and
    the rows of the `snapshots` metadata table (the snapshot list in the table's metadata
    file; no manifest or data file is opened), a few numbers per snapshot. Returns the current snapshot's
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
    {#- One row per snapshot, counted here: an aggregate would add a shuffle stage, which
        costs more than the rows (measured: 0.19 s against 0.07 s on 30 snapshots). -#}
    {%- set query -%}
        select
            unix_millis(current_timestamp()) as now_ms,
            unix_millis(committed_at) as committed_ms,
            {#- an append (or a dynamic partition overwrite, which replaces exactly the
                partitions it writes) adds its files over changed-partition-count partitions,
                so one partition gains at most added - changed + 1; other operations: all added -#}
            case
                when unix_millis(committed_at) <= {{ checked_ms }} then 0
                when operation = 'append' or summary['replace-partitions'] = 'true'
                    then greatest(cast(summary['added-data-files'] as bigint)
                    - coalesce(cast(summary['changed-partition-count'] as bigint), 1) + 1, 0)
                else coalesce(cast(summary['added-data-files'] as bigint), 0)
            end as partition_files_added,
            {%- for counter in counters %}
            case when snapshot_id = {{ current }} then cast(summary['{{ counter }}'] as bigint) end
                as {{ counter | replace('-', '_') }}{{ ',' if not loop.last }}
            {%- endfor %}
        from {{ table_name }}.snapshots
    {%- endset -%}
    {%- set read = _maintenance_execute(query) -%}
    {%- if read.error -%}{{ return({'error': read.error}) }}{%- endif -%}
    {%- set epoch = modules.datetime.datetime(1970, 1, 1) -%}
    {%- set cutoff_ms = ((expire_before - epoch).total_seconds() * 1000) | int -%}
    {%- set summary = {'snapshots': 0, 'snapshots_before_cutoff': 0, 'snapshots_since_check': 0,
                       'partition_files_added_bound': 0, 'oldest_snapshot_age_hours': 0.0} -%}
    {%- for counter in counters -%}{%- do summary.update({counter | replace('-', '_'): 0}) -%}{%- endfor -%}
    {%- for row in read.table.rows -%}
        {%- do summary.update({
            'snapshots': summary.snapshots + 1,
            'snapshots_before_cutoff': summary.snapshots_before_cutoff + (1 if row['committed_ms'] < cutoff_ms else 0),
            'snapshots_since_check': summary.snapshots_since_check + (1 if row['committed_ms'] > checked_ms else 0),
            'partition_files_added_bound': summary.partition_files_added_bound + (row['partition_files_added'] or 0) | int,
            'oldest_snapshot_age_hours': [(row['now_ms'] - row['committed_ms']) | float / 3600000.0, summary.oldest_snapshot_age_hours] | max}) -%}
        {%- for counter in counters if row[counter | replace('-', '_')] is not none -%}
            {%- do summary.update({counter | replace('-', '_'): row[counter | replace('-', '_')] | int}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- do summary.update({'error': none, 'current_snapshot_id': current | int, 'properties': properties,
                           'checked_at_ms': checked_ms}) -%}
    {{ return(summary) }}
{% endmacro %}
