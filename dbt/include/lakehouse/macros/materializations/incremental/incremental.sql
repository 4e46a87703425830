{#- Override: dbt-spark's full refresh drops an Iceberg table, history and all (dbt-adapters #1145). -#}
{#- Project copy of dbt-spark 1.11's incremental materialization, changed in two places (marked
    "project"): a full refresh of an Iceberg table is an atomic `create or replace table`, as
    dbt-spark already does for Delta. dbt-spark drops the table first (dbt-adapters #1145): the
    snapshot history is lost, and a failing CTAS leaves no table at all. Iceberg's replace is one
    commit: a failing query leaves the old table readable, a successful one keeps its history.
    And a second one: a merge whose source has no row is skipped (Iceberg would commit an
    empty snapshot on every run without new data). And a third: a backfill run
    (macros/backfill/backfill.sql) overwrites the model's range of days, whatever its strategy.
    And a fourth: a day the model recomputed (touched_days) that its overwrite left without
    any row is emptied (a partition overwrite replaces only the days it writes rows for).
    Everything else is dbt-spark's code; compare it with dbt-spark's when upgrading. -#}
{% materialization incremental, adapter='lakehouse', supported_languages=['sql', 'python'] -%}
  {#-- Validate early so we don't run SQL if the file_format + strategy combo is invalid --#}
  {%- set raw_file_format = config.get('file_format', default='parquet') -%}
  {%- set raw_strategy = config.get('incremental_strategy') or 'append' -%}
  {%- set grant_config = config.get('grants') -%}

  {%- set file_format = dbt_spark_validate_get_file_format(raw_file_format) -%}
  {%- set strategy = dbt_spark_validate_get_incremental_strategy(raw_strategy, file_format) -%}

  {#-- Set vars --#}

  {%- set unique_key = config.get('unique_key', none) -%}
  {%- set partition_by = config.get('partition_by', none) -%}
  {%- set language = model['language'] -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set incremental_predicates = config.get('predicates', none) or config.get('incremental_predicates', none) -%}
  {%- set target_relation = this -%}
  {%- set existing_relation = load_relation(this) -%}
  {% set tmp_relation = this.incorporate(path = {"identifier": this.identifier ~ '__dbt_tmp'}) -%}

  {#-- for SQL model we will create temp view that doesn't have database and schema --#}
  {%- if language == 'sql'-%}
    {%- set tmp_relation = tmp_relation.include(database=false, schema=false) -%}
  {%- endif -%}

  {#-- a backfill replaces its days, whatever the model's strategy: none unless the project
      defines model_backfill (this adapter's is the default, model_backfill.sql) --#}
  {%- set backfill = model_backfill() -%}
  {#-- project: the days the model's SQL recomputes (touched_days), noted while dbt rendered it --#}
  {%- set recomputed_days = adapter.recomputed_days(this) -%}
  {%- if backfill -%}
    {%- do backfill_within_retention(backfill) -%}
    {%- set strategy = 'insert_overwrite' -%}
    {{ log(this ~ ": backfill of " ~ backfill.days | length ~ " days, " ~ backfill.start ~ " .. " ~ backfill.end ~ " (end excluded)", info=true) }}
  {%- endif -%}

  {#-- Set Overwrite Mode --#}
  {%- if strategy in ['insert_overwrite', 'microbatch'] and partition_by -%}
    {%- call statement() -%}
      set spark.sql.sources.partitionOverwriteMode = DYNAMIC
    {%- endcall -%}
  {%- endif -%}

  {#-- Run pre-hooks --#}
  {{ run_hooks(pre_hooks) }}

  {#-- Incremental run logic --#}
  {%- if existing_relation is none -%}
    {#-- Relation must be created --#}
    {%- call statement('main', language=language) -%}
      {{ create_table_as(False, target_relation, compiled_code, language) }}
    {%- endcall -%}
    {% do persist_constraints(target_relation, model) %}
  {%- elif existing_relation.is_view or should_full_refresh() -%}
    {#-- Relation must be dropped & recreated --#}
    {% set is_delta = (file_format == 'delta' and existing_relation.is_delta) %}
    {#-- project: Iceberg too is replaced in one commit (`create or replace table` below), never dropped --#}
    {% set is_iceberg = (file_format == 'iceberg' and existing_relation.is_iceberg) %}
    {% if not is_delta and not is_iceberg %} {#-- If Delta, we will `create or replace` below, so no need to drop --#}
      {% do adapter.drop_relation(existing_relation) %}
    {% endif %}
    {%- call statement('main', language=language) -%}
      {{ create_table_as(False, target_relation, compiled_code, language) }}
    {%- endcall -%}
    {% do persist_constraints(target_relation, model) %}
  {%- else -%}
    {#-- Relation must be merged --#}
    {#-- project: a backfill writes only the model's rows of its range --#}
    {%- set source_sql = backfill_rows(backfill, compiled_code, config.get('backfill_by')) if backfill else compiled_code -%}
    {%- call statement('create_tmp_relation', language=language) -%}
      {{ create_table_as(True, tmp_relation, source_sql, language) }}
    {%- endcall -%}
    {%- do process_schema_changes(on_schema_change, tmp_relation, existing_relation) -%}
    {#-- project: the merge reads the target only where the source's keys are (a literal
         predicate Iceberg prunes by), and a merge of no rows is skipped (Iceberg would
         commit an empty snapshot) --#}
    {%- set source_keys = _merge_source_keys(tmp_relation, unique_key) if strategy == 'merge' and language == 'sql' else none -%}
    {%- if source_keys is not none and source_keys.empty -%}
      {{ log(this ~ ": no new rows, nothing merged", info=true) }}
      {%- call statement('main') -%}
        select 'no new rows' as nothing_merged
      {%- endcall -%}
    {%- else -%}
    {%- if source_keys is not none and source_keys.predicate -%}
      {%- set incremental_predicates = (incremental_predicates or []) + [source_keys.predicate] -%}
    {%- endif -%}
    {%- set head_before = backfill_head(target_relation) if backfill else none -%}
    {%- set recomputed_head_before = written_head(target_relation) if recomputed_days and strategy == 'insert_overwrite' and not backfill else none -%}
    {%- call statement('main') -%}
      {{ dbt_spark_get_incremental_sql(strategy, tmp_relation, target_relation, existing_relation, unique_key, incremental_predicates) }}
    {%- endcall -%}
    {%- endif -%}
    {%- if backfill -%}
      {%- do backfill_finish(target_relation, config.get('backfill_by'), backfill, head_before) -%}
    {%- elif recomputed_days and strategy == 'insert_overwrite' -%}
      {#-- project: a recomputed day left without rows would keep its old ones otherwise --#}
      {%- do clear_days_left_empty(target_relation, config.get('backfill_by'), recomputed_days, recomputed_head_before, tmp_relation) -%}
    {%- endif -%}
    {%- if language == 'python' -%}
      {#--
      This is yucky.
      See note in dbt-spark/dbt/include/spark/macros/adapters.sql
      re: python models and temporary views.

      Also, why do neither drop_relation or adapter.drop_relation work here?!
      --#}
      {% call statement('drop_relation') -%}
        drop table if exists {{ tmp_relation }}
      {%- endcall %}
    {%- endif -%}
  {%- endif -%}

  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}

  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}

{%- endmaterialization %}

{#- The merge source's keys, read before the merge: {empty, predicate}. With a unique_key
    whose (first) column holds integers or strings, and at most var('merge_key_literals_limit')
    distinct values of it, `predicate` restricts the target to those values as literals:
    Iceberg skips the files and row groups whose key bounds hold none of them, and the join
    meets only the target rows that can match, instead of shuffling the whole target. For a
    composite key the first column's values bound the rows that can match (the merge still
    matches on every column). Otherwise no predicate, a plain emptiness check. -#}
{% macro _merge_source_keys(tmp_relation, unique_key) %}
  {%- if not execute -%}{{ return(none) }}{%- endif -%}
  {%- set limit = lakehouse_var('merge_key_literals_limit') | int -%}
  {%- if not unique_key -%}
    {%- set empty = run_query('select 1 from ' ~ tmp_relation ~ ' limit 1').rows | length == 0 -%}
    {{ return({'empty': empty, 'predicate': none}) }}
  {%- endif -%}
  {%- set key_columns = [unique_key] if unique_key is string else unique_key -%}
  {%- set unique_key = key_columns[0] -%}
  {#- every key column is selected, so a key the model lacks fails here, as dbt's merge would -#}
  {%- set keys = run_query('select distinct ' ~ unique_key ~ ' from (select ' ~ key_columns | join(', ')
      ~ ' from ' ~ tmp_relation ~ ') limit ' ~ (limit + 1)).columns[0].values() | list -%}
  {%- set literals = [] -%}
  {%- for key in keys | reject('none') | sort -%}
    {%- if key is number and key is not boolean and key == key | int -%}
      {%- do literals.append(key | int | string) -%}
    {%- elif key is string -%}
      {%- do literals.append("'" ~ key | replace("\\", "\\\\") | replace("'", "\\'") ~ "'") -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if not keys or keys | length > limit or literals | length != keys | reject('none') | list | length or not literals -%}
    {{ return({'empty': keys | length == 0, 'predicate': none}) }}
  {%- endif -%}
  {{ return({'empty': false, 'predicate': 'DBT_INTERNAL_DEST.' ~ unique_key ~ ' in (' ~ literals | join(', ') ~ ')'}) }}
{% endmacro %}
