{#- The landing zone's folder: LAKEHOUSE_LANDING_DIR when set (a test's or a benchmark's own
    landing folder), else the session's `spark.lakehouse.landing_dir`, which
    scripts/spark_config.py sets next to the warehouse and metastore paths. -#}
{% macro landing_dir() %}
    {%- set from_env = env_var('LAKEHOUSE_LANDING_DIR', '') -%}
    {%- if from_env -%}{{ return(from_env) }}{%- endif -%}
    {%- set row = run_query('set spark.lakehouse.landing_dir').rows[0] -%}
    {%- if row[1] in ('', '<undefined>') -%}
        {{ exceptions.raise_compiler_error(
            "no landing folder: the Spark session lacks spark.lakehouse.landing_dir, so it was "
            ~ "not started from scripts/spark_config.py (profiles with `type: lakehouse` start it). Run "
            ~ "`make setup` (installs the project's dbt adapter) or set LAKEHOUSE_LANDING_DIR.") }}
    {%- endif -%}
    {{ return(row[1]) }}
{% endmacro %}
