{#- The cheap read every run makes, in one statement (scripts/java/lakehouse/TableState.java):
    the table's properties (the current snapshot id and the checkpoint the last full health
    read left, see iceberg_maintenance_checkpoint) and its snapshot log (in the table's
    metadata file; no manifest or data file is opened), a few numbers per snapshot. Returns
    the current snapshot's summary counters (total-data-files, total-delete-files,
    total-position-deletes, total-equality-deletes, total-records, total-files-size),
    snapshot counts for expiry and an upper bound of the data files any one partition gained
    since the checkpoint. `expire_before`: a UTC datetime; snapshots older than it are
    counted apart. -#}
{% macro iceberg_commit_summary(relation, expire_before) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {%- set read = _maintenance_execute("select reflect('lakehouse.TableState', 'summary', '" ~ table_name ~ "') from values (1)") -%}
    {%- if read.error -%}{{ return({'error': read.error}) }}{%- endif -%}
    {%- set state = fromjson(read.table.rows[0][0]) -%}
    {%- set properties = state.properties -%}
    {%- set current = properties.get('current-snapshot-id', 'none') | string -%}
    {%- if not modules.re.fullmatch('-?[0-9]+', current) -%}
        {{ return({'error': none, 'current_snapshot_id': none, 'properties': properties}) }}
    {%- endif -%}
    {%- set checked_ms = properties.get('lakehouse.maintenance.checked-at-ms', '-1') | int(-1) -%}
    {%- set counters = ['total_data_files', 'total_delete_files', 'total_position_deletes',
                        'total_equality_deletes', 'total_records', 'total_files_size'] -%}
    {%- set epoch = modules.datetime.datetime(1970, 1, 1) -%}
    {%- set cutoff_ms = ((expire_before - epoch).total_seconds() * 1000) | int -%}
    {%- set summary = {'snapshots': 0, 'snapshots_before_cutoff': 0, 'snapshots_since_check': 0,
                       'partition_files_added_bound': 0, 'oldest_snapshot_age_hours': 0.0} -%}
    {%- for counter in counters -%}{%- do summary.update({counter: 0}) -%}{%- endfor -%}
    {%- for snapshot in state.snapshots -%}
        {#- an append (or a dynamic partition overwrite, which replaces exactly the partitions
            it writes) adds its files over changed-partition-count partitions, so one
            partition gains at most added - changed + 1; other operations: all added -#}
        {%- set added = snapshot.added_data_files or 0 -%}
        {%- if snapshot.committed_ms <= checked_ms -%}
            {%- set partition_files_added = 0 -%}
        {%- elif snapshot.operation == 'append' or snapshot.replace_partitions -%}
            {%- set partition_files_added = [added - (snapshot.changed_partition_count or 1) + 1, 0] | max -%}
        {%- else -%}
            {%- set partition_files_added = added -%}
        {%- endif -%}
        {%- do summary.update({
            'snapshots': summary.snapshots + 1,
            'snapshots_before_cutoff': summary.snapshots_before_cutoff + (1 if snapshot.committed_ms < cutoff_ms else 0),
            'snapshots_since_check': summary.snapshots_since_check + (1 if snapshot.committed_ms > checked_ms else 0),
            'partition_files_added_bound': summary.partition_files_added_bound + partition_files_added,
            'oldest_snapshot_age_hours': [(state.now_ms - snapshot.committed_ms) | float / 3600000.0, summary.oldest_snapshot_age_hours] | max}) -%}
        {%- for counter in counters if snapshot.get(counter) is not none -%}
            {%- do summary.update({counter: snapshot[counter] | int}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- do summary.update({'error': none, 'current_snapshot_id': current | int, 'properties': properties,
                           'checked_at_ms': checked_ms}) -%}
    {{ return(summary) }}
{% endmacro %}
