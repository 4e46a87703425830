{#- The incremental materialization's extension point for a backfill: this run's backfill of
    the model, {start, end, days} ('YYYY-MM-DD'; end exclusive), or none. A project that
    recomputes ranges of days defines its own `model_backfill` (dbt takes the root project's
    macro of a name first); the materialization then overwrites those days whatever the
    model's strategy, with the project's backfill_rows, backfill_head and backfill_finish.
    Without one, every run is the scheduled one. -#}
{% macro model_backfill() %}
    {{ return(none) }}
{% endmacro %}
