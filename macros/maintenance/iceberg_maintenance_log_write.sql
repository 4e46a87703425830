{#- Append rows to the maintenance log, an Iceberg table (var maintenance_log_schema,
    default `ops`, with the schema prefix; declared as the dbt source
    maintenance.maintenance_log), in one insert (one commit); the table is created on the
    first failed insert. Never raises: returns '' or the error text. Off with
    --vars '{maintenance_log: false}'. -#}
{% macro iceberg_maintenance_log_write(rows) %}
    {%- if not (var('maintenance_log', true) | string | lower in ['true', '1', 'yes']) -%}{{ return('') }}{%- endif -%}
    {%- set relation = iceberg_maintenance_log_relation() -%}
    {%- set insert -%}
        insert into {{ relation }} values
        {%- for row in rows %}
        (
            {{ _maintenance_literal(invocation_id) }}, current_timestamp(),
            {%- for column in ['table_name', 'trigger', 'snapshot_id', 'decision_read', 'decision_seconds', 'total_seconds',
                               'data_files_before', 'data_files_after', 'bytes_before', 'bytes_after',
                               'delete_files_before', 'delete_files_after', 'records_before', 'records_after',
                               'manifests_before', 'manifests_after', 'snapshots_before', 'snapshots_after',
                               'actions', 'steps_run', 'step_seconds', 'conflicts', 'errors', 'outcome'] %}
            {{ _maintenance_literal(row.get(column)) }}{{ ',' if not loop.last }}
            {%- endfor %}
        ){{ ',' if not loop.last }}
        {%- endfor %}
    {%- endset -%}
    {%- if adapter.try_execute is not defined -%}
        {#- without try_execute a failed insert would raise: create the table first -#}
        {%- do run_query('create schema if not exists ' ~ relation.schema) -%}
        {%- do run_query(iceberg_maintenance_log_ddl(relation)) -%}
    {%- endif -%}
    {%- set written = _maintenance_execute(insert) -%}
    {%- if written.error and ('TABLE_OR_VIEW_NOT_FOUND' in written.error or 'SCHEMA_NOT_FOUND' in written.error) -%}
        {%- set created = _maintenance_execute('create schema if not exists ' ~ relation.schema) -%}
        {%- set created = _maintenance_execute(iceberg_maintenance_log_ddl(relation)) -%}
        {%- if created.error -%}{{ return(created.error) }}{%- endif -%}
        {%- set written = _maintenance_execute(insert) -%}
    {%- endif -%}
    {{ return(written.error or '') }}
{% endmacro %}

{#- Write the rows iceberg_maintenance_record collected; a failure is said, never raised
    (the models are unaffected). -#}
{% macro iceberg_maintenance_log_flush(rows) %}
    {%- if not rows -%}{{ return('') }}{%- endif -%}
    {%- set error = iceberg_maintenance_log_write(rows) -%}
    {%- if error -%}
        {{ log("maintenance log: no row written for " ~ (rows | map(attribute='table_name') | join(', '))
            ~ " (the models are unaffected): " ~ error, info=true) }}
    {%- endif -%}
{% endmacro %}
