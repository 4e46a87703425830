{#- Record one maintenance run of one table: a row in the maintenance log table
    (iceberg_maintenance_log_write) and one line in dbt's log, e.g.
        maintenance dwd.dim_users__state: data files 2 -> 2, bytes 32600 -> 32600, delete files 1 -> 1,
        manifests n/a -> n/a, snapshots 4 -> 4 | rewrite_data_files skipped (...); ... |
        decision 0.14 s (snapshot summary) | 0.21 s
    Operators read the line; tests and bench parse it (scripts/bench/dbt_workload.py).
    With `log_rows` (a list) the row is appended there, for the caller to write with others. -#}
{% macro iceberg_maintenance_record(decision, outcome, trigger='operation', log_rows=none) %}
    {%- set before = decision.summary if decision.summary is mapping and decision.summary.current_snapshot_id is not none else {} -%}
    {%- set after = outcome.summary if outcome.summary is mapping and outcome.summary.current_snapshot_id is not none else before -%}
    {%- set health_before = decision.health or {} -%}
    {%- set health_after = outcome.health or health_before -%}
    {%- set figures = [('data files', 'total_data_files', before, after), ('bytes', 'total_files_size', before, after),
                       ('delete files', 'total_delete_files', before, after), ('manifests', 'manifests', health_before, health_after),
                       ('snapshots', 'snapshots', before, after)] -%}
    {%- set parts = [] -%}
    {%- for label, key, first, last in figures -%}
        {%- do parts.append(label ~ ' ' ~ first.get(key, 'n/a') ~ ' -> ' ~ last.get(key, 'n/a')) -%}
    {%- endfor -%}
    {%- set outcome_name = 'failed' if outcome.errors else ('conflict' if outcome.conflicts else ('maintained' if outcome.ran else 'healthy')) -%}
    {%- set row = {
        'table_name': _iceberg_table_name(decision.relation), 'trigger': trigger,
        'snapshot_id': before.get('current_snapshot_id'), 'decision_read': decision.read,
        'decision_seconds': decision.seconds, 'total_seconds': decision.seconds + outcome.seconds,
        'data_files_before': before.get('total_data_files'), 'data_files_after': after.get('total_data_files'),
        'bytes_before': before.get('total_files_size'), 'bytes_after': after.get('total_files_size'),
        'delete_files_before': before.get('total_delete_files'), 'delete_files_after': after.get('total_delete_files'),
        'records_before': before.get('total_records'), 'records_after': after.get('total_records'),
        'manifests_before': health_before.get('manifests'), 'manifests_after': health_after.get('manifests'),
        'snapshots_before': before.get('snapshots'), 'snapshots_after': after.get('snapshots'),
        'actions': outcome.actions | join('; '), 'steps_run': outcome.ran, 'step_seconds': outcome.step_seconds,
        'conflicts': outcome.conflicts, 'errors': (outcome.errors | join('; ')) if outcome.errors else none,
        'outcome': outcome_name} -%}
    {%- set log_started = modules.datetime.datetime.utcnow() -%}
    {%- if log_rows is none -%}
        {%- do iceberg_maintenance_log_flush([row]) -%}
    {%- else -%}
        {%- do log_rows.append(row) -%}
    {%- endif -%}
    {%- set log_seconds = (modules.datetime.datetime.utcnow() - log_started).total_seconds() -%}
    {{ log("maintenance " ~ decision.relation ~ ": " ~ (parts | join(', '))
        ~ " | " ~ (outcome.actions | join('; ') if outcome.actions else 'no maintenance policy')
        ~ " | decision " ~ '%.2f' | format(decision.seconds) ~ " s (" ~ decision.read ~ ")"
        ~ " | " ~ '%.2f' | format(decision.seconds + outcome.seconds + log_seconds) ~ " s", info=true) }}
    {{ return(row) }}
{% endmacro %}
