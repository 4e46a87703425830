{#- The maintenance log table: one row per table per maintenance run. -#}
{% macro iceberg_maintenance_log_ddl(relation) %}
    create table if not exists {{ relation }} (
        run_id string comment 'dbt invocation id',
        logged_at timestamp,
        table_name string,
        trigger string comment 'post-hook | nightly | operation',
        snapshot_id bigint comment 'current snapshot when the decision was made',
        decision_read string comment 'snapshot summary, or summary + files and manifests',
        decision_seconds double,
        total_seconds double,
        data_files_before bigint, data_files_after bigint,
        bytes_before bigint, bytes_after bigint,
        delete_files_before bigint, delete_files_after bigint,
        records_before bigint, records_after bigint,
        manifests_before bigint, manifests_after bigint,
        snapshots_before bigint, snapshots_after bigint,
        actions string,
        steps_run array<string>,
        step_seconds map<string, double>,
        conflicts int,
        errors string,
        outcome string comment 'healthy | maintained | conflict | failed'
    ) using iceberg
    tblproperties ('format-version' = '2', 'commit.retry.num-retries' = '20',
                   'write.distribution-mode' = 'none', 'write.metadata.delete-after-commit.enabled' = 'true')
{% endmacro %}
