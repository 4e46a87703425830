{#- The cheap read every run makes, in one statement (dbt/include/lakehouse/java/lakehouse/TableState.java):
    the table's properties (the current snapshot id and the checkpoint the last full health
    read left, see iceberg_maintenance_checkpoint) and its snapshot log (in the table's
    metadata file; no manifest or data file is opened), a few numbers per snapshot, summed
    up by the adapter (maintenance.commit_summary): the current snapshot's counters,
    snapshot counts for expiry and an upper bound of the data files any one partition gained
    since the checkpoint. `expire_before`: a UTC datetime; snapshots older than it are
    counted apart. -#}
{% macro iceberg_commit_summary(relation, expire_before) %}
    {%- set read = _maintenance_execute("select reflect('lakehouse.TableState', 'summary', '" ~ _iceberg_table_name(relation) ~ "') from values (1)") -%}
    {%- if read.error -%}{{ return({'error': read.error}) }}{%- endif -%}
    {%- set cutoff_ms = ((expire_before - modules.datetime.datetime(1970, 1, 1)).total_seconds() * 1000) | int -%}
    {{ return(adapter.maintenance_summary(fromjson(read.table.rows[0][0]), cutoff_ms)) }}
{% endmacro %}
