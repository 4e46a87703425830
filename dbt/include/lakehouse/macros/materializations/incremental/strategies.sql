{#- Override: dbt-spark's merge writes `update set *`/`insert *` (fails on a dropped column), no delete. -#}
{#- dbt-spark's merge, rewritten for two reasons:

    1. It names its columns. dbt-spark writes `update set *` and `insert *`, which need every
       target column in the incoming rows: a model that stops selecting a column (its table
       keeps it, on_schema_change append_new_columns) fails with UNRESOLVED_COLUMN. Here the
       merge writes the columns the model selects that the table has; a column the model no
       longer selects keeps its value on update and is null on insert, as on other adapters.
    2. A delete branch (dbt-spark 1.11 emits none). A model that applies a changelog sets
       `merge_delete_when`: a predicate on the incoming row (alias DBT_INTERNAL_SOURCE) that
       marks a delete. The merge then deletes the matched target row when the predicate
       holds, updates it otherwise, and inserts unmatched rows unless they are deletes (a
       delete of an unknown key is a no-op).
    unique_key (one or a list), incremental_predicates, merge_update_columns and
    merge_exclude_columns behave as in dbt-spark; without a unique_key every row is inserted. -#}
{% macro lakehouse__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {%- set delete_when = config.get('merge_delete_when') -%}
    {%- if delete_when -%}
        {#- rendered twice into the MERGE below: only a plain predicate may pass -#}
        {%- do _safe_predicate(delete_when, 'lakehouse__get_merge_sql', 'merge_delete_when') -%}
        {%- if not unique_key -%}
            {{ exceptions.raise_compiler_error("merge_delete_when needs a unique_key to match rows on") }}
        {%- endif -%}
        {%- if 'DBT_INTERNAL_SOURCE.' not in delete_when -%}
            {{ exceptions.raise_compiler_error(
                "merge_delete_when must test the incoming row, e.g. \"DBT_INTERNAL_SOURCE._change_op = 'delete'\"; got: " ~ delete_when) }}
        {%- endif -%}
    {%- endif -%}
    {%- set columns = _merge_columns(source, target) -%}
    {%- set names = columns | map(attribute='quoted') | list -%}
    {#- dbt-spark's helper answers none for "every column" (its `update set *`) -#}
    {%- set update_columns = get_merge_update_columns(config.get('merge_update_columns'), config.get('merge_exclude_columns'), columns) or names -%}
    {%- set keys = [] if not unique_key else ([unique_key] if unique_key is string else unique_key) -%}
    {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
    {%- for key in keys -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
    {%- if not keys -%}{%- do predicates.append('false') -%}{%- endif %}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on {{ predicates | join(' and ') }}
    {%- if delete_when %}
    when matched and ({{ delete_when }}) then delete
    {%- endif %}
    {%- if names %}
    when matched then update set
        {%- for name in update_columns %}
        {{ name }} = DBT_INTERNAL_SOURCE.{{ name }}{{ ',' if not loop.last }}
        {%- endfor %}
    when not matched{{ ' and not (' ~ delete_when ~ ')' if delete_when }} then insert ({{ names | join(', ') }})
    values ({% for name in names %}DBT_INTERNAL_SOURCE.{{ name }}{{ ', ' if not loop.last }}{% endfor %})
    {%- else %}
    {#- no column known (relations not built yet, e.g. `dbt compile`): dbt-spark's forms #}
    when matched then update set *
    when not matched{{ ' and not (' ~ delete_when ~ ')' if delete_when }} then insert *
    {%- endif %}
{% endmacro %}

{#- The incoming columns the target has, in the incoming order (a column new to the model is
    in the target by now unless on_schema_change is ignore, which leaves it out). -#}
{% macro _merge_columns(source, target) %}
    {%- set target_names = adapter.get_columns_in_relation(target) | map(attribute='name') | map('lower') | list -%}
    {%- set columns = [] -%}
    {%- for column in adapter.get_columns_in_relation(source) if column.name | lower in target_names -%}
        {%- do columns.append(column) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}
