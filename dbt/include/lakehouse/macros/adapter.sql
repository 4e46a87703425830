{#- The lakehouse adapter dispatches to dbt-spark's `spark__` macros; the project's own
    overrides are in the project's macros/ folder. -#}
