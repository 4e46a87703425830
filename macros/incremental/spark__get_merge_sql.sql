{#- Project override of dbt-spark's merge (dbt-spark 1.11 emits no delete branch).

    A model that applies a changelog sets `merge_delete_when`: a predicate on the incoming
    row (alias DBT_INTERNAL_SOURCE) that marks a delete. The merge then
      - deletes the matched target row when the predicate holds,
      - updates it otherwise,
      - inserts unmatched rows unless they are deletes (a delete of an unknown key is a no-op).
    Without `merge_delete_when` the SQL is dbt-spark's own, so other models are unaffected:
    `dbt.` names the adapter's internal macros (dbt-spark's included), where this override,
    a root-project macro, is not found again. (`dbt_spark.` does not resolve: dbt exposes an
    adapter plugin's macros only through the `dbt` namespace.) -#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {%- set delete_when = config.get('merge_delete_when') -%}
    {%- if not delete_when -%}
        {{ return(dbt.spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates)) }}
    {%- endif -%}
    {#- rendered twice into the MERGE below: only a plain predicate may pass -#}
    {%- do _safe_predicate(delete_when, 'spark__get_merge_sql', 'merge_delete_when') -%}
    {%- if not unique_key -%}
        {{ exceptions.raise_compiler_error("merge_delete_when needs a unique_key to match rows on") }}
    {%- endif -%}
    {%- if 'DBT_INTERNAL_SOURCE.' not in delete_when -%}
        {{ exceptions.raise_compiler_error(
            "merge_delete_when must test the incoming row, e.g. \"DBT_INTERNAL_SOURCE._change_op = 'delete'\"; got: " ~ delete_when) }}
    {%- endif -%}
    {%- set keys = [unique_key] if unique_key is string else unique_key -%}
    {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
    {%- for key in keys -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor %}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on {{ predicates | join(' and ') }}
    when matched and ({{ delete_when }}) then delete
    when matched then update set *
    when not matched and not ({{ delete_when }}) then insert *
{% endmacro %}
