{#- on_schema_change for Iceberg models, as metadata-only changes (dbt-spark 1.11 refuses to
    drop a column on Iceberg, dbt-adapters #467, and changes a type with a statement Iceberg
    refuses unless it widens):
      append_new_columns  new model columns are added to the table;
      sync_all_columns    also drops the columns the model no longer selects and widens
                          types in place (int -> bigint, float -> double, decimal precision
                          up). Any other type change fails the model before the table is
                          touched (every change is checked first), naming the column: rebuild
                          it with --full-refresh, or add a new column and backfill it.
    No data file is rewritten; snapshots before the change still read the old schema. Other
    file formats keep dbt-spark's behaviour. -#}
{#- Override: dbt-spark 1.11 refuses to drop a column on Iceberg (dbt-adapters #467). -#}
{% macro lakehouse__alter_relation_add_remove_columns(relation, add_columns, remove_columns) %}
    {%- if config.get('file_format') != 'iceberg' -%}
        {{ return(dbt.spark__alter_relation_add_remove_columns(relation, add_columns, remove_columns)) }}
    {%- endif -%}
    {%- if add_columns -%}
        {%- set added = [] -%}
        {%- for column in add_columns -%}
            {%- do added.append(column.quoted ~ ' ' ~ column.data_type) -%}
        {%- endfor -%}
        {%- do run_query('alter table ' ~ relation ~ ' add columns (' ~ added | join(', ') ~ ')') -%}
    {%- endif -%}
    {%- if remove_columns -%}
        {%- do run_query('alter table ' ~ relation ~ ' drop columns ('
            ~ remove_columns | map(attribute='quoted') | join(', ') ~ ')') -%}
    {%- endif -%}
{% endmacro %}

{#- Override: dbt's default alters the table before a type Iceberg cannot widen fails it, midway. -#}
{#- Every type change is checked before any column is added or dropped: a change Iceberg
    cannot make in place fails the model with the table untouched. -#}
{% macro lakehouse__sync_column_schemas(on_schema_change, target_relation, schema_changes_dict) %}
    {%- if config.get('file_format') == 'iceberg' and on_schema_change == 'sync_all_columns' -%}
        {%- set current = {} -%}
        {%- for column in adapter.get_columns_in_relation(target_relation) -%}
            {%- do current.update({column.name | lower: column.data_type}) -%}
        {%- endfor -%}
        {%- for change in schema_changes_dict['new_target_types']
              if not _iceberg_widens(current.get(change['column_name'] | lower, ''), change['new_type']) -%}
            {{ exceptions.raise_compiler_error(target_relation ~ "." ~ change['column_name'] ~ ": the model now produces "
                ~ change['new_type'] ~ " where the table has " ~ current.get(change['column_name'] | lower) ~ "."
                ~ " on_schema_change sync_all_columns changes a type only where Iceberg widens it in place"
                ~ " (int -> bigint, float -> double, decimal(P,S) -> decimal(P2,S) with P2 > P); nothing was"
                ~ " changed. Rebuild the table with --full-refresh, or add a new column and backfill it.") }}
        {%- endfor -%}
    {%- endif -%}
    {{ return(dbt.default__sync_column_schemas(on_schema_change, target_relation, schema_changes_dict)) }}
{% endmacro %}

{#- Override: dbt-spark's `alter column` statement is refused by Iceberg unless it widens. -#}
{#- A widening (checked above): Iceberg's in-place type promotion. -#}
{% macro lakehouse__alter_column_type(relation, column_name, new_column_type) %}
    {%- if config.get('file_format') != 'iceberg' -%}
        {{ return(dbt.spark__alter_column_type(relation, column_name, new_column_type)) }}
    {%- endif -%}
    {%- do run_query('alter table ' ~ relation ~ ' alter column ' ~ adapter.quote(column_name) ~ ' type ' ~ new_column_type) -%}
{% endmacro %}

{#- Whether Iceberg changes `current` to `wanted` in place (metadata only): int or integer -> bigint,
    float -> double, decimal(P,S) -> decimal(P2,S) with P2 > P. Also used by the project's
    widen_column operation (schema_evolution/ beside it). -#}
{% macro _iceberg_widens(current, wanted) %}
    {%- set current = current | lower | replace(' ', '') -%}
    {%- set wanted = wanted | lower | replace(' ', '') -%}
    {%- set allowed = {'int': ['bigint'], 'integer': ['bigint'], 'float': ['double']} -%}
    {%- if current.startswith('decimal(') and wanted.startswith('decimal(') -%}
        {%- set was = current[8:-1].split(',') -%}
        {%- set now = wanted[8:-1].split(',') -%}
        {{ return(now[1] | int == was[1] | int and now[0] | int > was[0] | int) }}
    {%- endif -%}
    {{ return(wanted in allowed.get(current, [])) }}
{% endmacro %}
