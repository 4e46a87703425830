{#- Leave what the last full health read found in the table's properties, so the next
    cheap decision can bound the table's state from the snapshots committed since:
        lakehouse.maintenance.checked-at-ms                  when the read ran (engine clock)
        lakehouse.maintenance.max-small-files-in-partition   small data files in the worst partition
        lakehouse.maintenance.small-manifests                small manifests
        lakehouse.maintenance.stats-records                  total-records when statistics were computed
    A metadata-only commit (no snapshot), made only on runs that read the metadata tables.
    Returns '' or the error text. -#}
{% macro iceberg_maintenance_checkpoint(relation, health, stats_records=none) %}
    {%- set properties = {} -%}
    {%- if health is not none -%}
        {%- do properties.update({
            'lakehouse.maintenance.checked-at-ms': health.checked_at_ms | int,
            'lakehouse.maintenance.max-small-files-in-partition': health.max_small_files_in_partition | int,
            'lakehouse.maintenance.small-manifests': health.small_manifests | int}) -%}
    {%- endif -%}
    {%- if stats_records is not none -%}
        {%- do properties.update({'lakehouse.maintenance.stats-records': stats_records | int}) -%}
    {%- endif -%}
    {%- set sql -%}
        alter table {{ _iceberg_table_name(relation) }} set tblproperties (
            {%- for name, value in properties.items() %}
            '{{ name }}' = '{{ value }}'{{ ',' if not loop.last }}
            {%- endfor %}
        )
    {%- endset -%}
    {%- set written = _maintenance_execute(sql) -%}
    {{ return(written.error or '') }}
{% endmacro %}
