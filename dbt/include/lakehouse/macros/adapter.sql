{#- The lakehouse adapter's macros: the project's overrides of dbt-spark (and of dbt's defaults
    where dbt-spark has none), laid out as dbt-spark lays out its own:
      adapters/          relations and columns: create_table_as (+ tblproperties_clause),
                         create_view_as, get_columns_in_relation, list_relations_without_caching,
                         and session_setting (a Spark session's setting, also read by the
                         project's macros)
      materializations/  seed.sql (load_csv_rows), test.sql (get_test_sql), incremental/
                         (the incremental materialization, strategies.sql's get_merge_sql,
                         on_schema_change.sql's column changes)
      schema_evolution/  rename_column, widen_column, drop_column: run-operations that change a
                         table's schema in its metadata only, never rewriting its files
      validation/        _safe_predicate: the one guard for a predicate or an option a macro
                         renders into a statement (the merge's and the maintenance's)
    Each override is named `lakehouse__<dbt-spark's name>`: for `type: lakehouse` dbt dispatches
    to lakehouse__, then dbt-spark's spark__, then default__, and a materialization declared
    with adapter='lakehouse' wins over dbt-spark's. An override that keeps dbt-spark's behaviour
    for some cases calls it as `dbt.spark__<name>`. Each one starts with a one-line comment: what
    dbt-spark does wrong on Iceberg, and the upstream issue when there is one. -#}
