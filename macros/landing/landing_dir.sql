{#- The landing zone's folder: LAKEHOUSE_LANDING_DIR when set (a test's or a benchmark's own
    landing folder), else the session's `spark.lakehouse.landing_dir`, which the adapter
    sets from the profile's `landing_dir` (default: `<data_dir>/landing`; read without a
    statement on the embedded targets: session_setting). -#}
{% macro landing_dir() %}
    {%- set from_env = env_var('LAKEHOUSE_LANDING_DIR', '') -%}
    {%- if from_env -%}{{ return(from_env) }}{%- endif -%}
    {%- set folder = session_setting('spark.lakehouse.landing_dir') -%}
    {%- if folder is none -%}
        {{ exceptions.raise_compiler_error(
            "no landing folder: the Spark session lacks spark.lakehouse.landing_dir, so the adapter "
            ~ "did not start it (a `type: lakehouse` profile with `method: session` and a `data_dir` "
            ~ "does). Set the profile's `data_dir`, or set LAKEHOUSE_LANDING_DIR.") }}
    {%- endif -%}
    {{ return(folder) }}
{% endmacro %}
