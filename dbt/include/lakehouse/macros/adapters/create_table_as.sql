{#- Override: in a write-audit-publish run, dbt-spark's `create or replace table` would drop main too. -#}
{#- Copy of dbt-spark 1.11's spark__create_table_as, changed where marked "project":
    inside a write-audit-publish run, an Iceberg table that exists is not replaced but
    emptied and refilled on the run's branch. Iceberg's `create or replace table` drops every
    ref of the table (main included): readers would see an empty table until the publish, and
    a red run could not leave main as it was. The replace keeps the table's schema and
    partitioning (a change of them needs a run with var write_audit_publish: false). -#}
{%- macro lakehouse__create_table_as(temporary, relation, compiled_code, language='sql') -%}
  {%- if language == 'sql' -%}
    {%- if temporary -%}
      {{ create_temporary_view(relation, compiled_code) }}
    {%- elif _wap_refill(relation) -%}
      {#-- project: two commits on the branch, published as one by the fast-forward --#}
      {%- do run_query('delete from ' ~ relation) -%}
      insert into {{ relation }} by name
      {{ compiled_code }}
    {%- else -%}
      {% if config.get('file_format', validator=validation.any[basestring]) in ['delta', 'iceberg'] %}
        create or replace table {{ relation }}
      {% else %}
        create table {{ relation }}
      {% endif %}
      {%- set contract_config = config.get('contract') -%}
      {%- if contract_config.enforced -%}
        {{ get_assert_columns_equivalent(compiled_code) }}
        {%- set compiled_code = get_select_subquery(compiled_code) %}
      {% endif %}
      {{ file_format_clause() }}
      {{ options_clause() }}
      {{ tblproperties_clause() }}
      {{ partition_cols(label="partitioned by") }}
      {{ clustered_cols(label="clustered by") }}
      {{ location_clause() }}
      {{ comment_clause() }}

      as
      {{ compiled_code }}
    {%- endif -%}
  {%- elif language == 'python' -%}
    {{ py_write_table(compiled_code=compiled_code, target_relation=relation) }}
  {%- endif -%}
{%- endmacro -%}

{#- Whether lakehouse__create_table_as refills: an Iceberg table that exists, in a run writing on
    a branch (wap_active_branch is the project's, macros/write_audit_publish/). -#}
{% macro _wap_refill(relation) %}
    {%- if not execute or config.get('file_format') != 'iceberg' or not wap_active_branch() -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set existing = load_relation(relation) -%}
    {{ return(existing is not none and not existing.is_view) }}
{% endmacro %}

{#- Override: dbt-spark omits write.wap.enabled, without which Iceberg ignores the run's branch. -#}
{#- project: every Iceberg table takes part in write-audit-publish when a run asks for it
    (write.wap.enabled does nothing until a session sets spark.wap.branch). -#}
{% macro lakehouse__tblproperties_clause() -%}
  {%- set tblproperties = dict(config.get('tblproperties') or {}) -%}
  {%- if config.get('file_format') == 'iceberg' -%}
    {%- do tblproperties.setdefault('write.wap.enabled', 'true') -%}
  {%- endif -%}
  {%- if tblproperties %}
    tblproperties (
      {%- for prop in tblproperties -%}
      '{{ prop }}' = '{{ tblproperties[prop] }}' {% if not loop.last %}, {% endif %}
    {%- endfor %}
    )
  {%- endif %}
{%- endmacro -%}
