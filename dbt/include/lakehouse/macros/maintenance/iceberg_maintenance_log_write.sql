{#- Append rows to the maintenance log, an Iceberg table in the platform's schema
    (platform_schema()), in one commit of one data file (lakehouse.AppendRows in
    dbt/include/lakehouse/java: an `insert ... values` cost a Spark job per model); the table is created when
    the first write finds none. Never raises: returns '' or the error text. Off with
    --vars '{maintenance_log: false}'. -#}
{% macro iceberg_maintenance_log_write(rows) %}
    {%- if not (lakehouse_var('maintenance_log') | string | lower in ['true', '1', 'yes']) -%}{{ return('') }}{%- endif -%}
    {%- set relation = iceberg_maintenance_log_relation() -%}
    {%- set logged_at = modules.datetime.datetime.utcnow().isoformat() -%}
    {%- set logged = [] -%}
    {%- for row in rows -%}
        {%- set entry = {'run_id': invocation_id, 'logged_at': logged_at} -%}
        {%- do entry.update(row) -%}
        {%- do logged.append(entry) -%}
    {%- endfor -%}
    {%- set append = "select reflect('lakehouse.AppendRows', 'append', '" ~ relation ~ "', "
        ~ _maintenance_literal(tojson(logged)) ~ ") from values (1)" -%}
    {%- set written = _maintenance_execute(append) -%}
    {%- if not written.error and written.table.rows[0][0] == 'missing' -%}
        {%- set created = _maintenance_execute('create schema if not exists ' ~ relation.schema) -%}
        {%- set created = _maintenance_execute(iceberg_maintenance_log_ddl(relation)) -%}
        {%- if created.error -%}{{ return(created.error) }}{%- endif -%}
        {%- set written = _maintenance_execute(append) -%}
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
