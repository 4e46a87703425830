{#- Nightly maintenance outside `dbt run`:
        dbt run-operation iceberg_maintain_all
        dbt run-operation iceberg_maintain_all --args '{select: [dim_users, dim_videos]}'
        dbt run-operation iceberg_maintain_all --args '{remove_orphans: false}'
    Applies each Iceberg model's own policy (the same decisions as its post-hook) and, unless
    remove_orphans is false, also the step too slow for every run (orphan-file removal):
    docs/running-dbt.md schedules that one weekly. -#}
{% macro iceberg_maintain_all(select=none, remove_orphans=true) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set wanted = none if select is none else ([select] if select is string else select) -%}
    {%- for node in graph.nodes.values()
          if node.resource_type == 'model' and node.config.get('file_format') == 'iceberg'
          and node.config.materialized in ['table', 'incremental']
          and (wanted is none or node.name in wanted) -%}
        {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
        {%- if relation is none -%}
            {{ log("maintenance " ~ node.schema ~ "." ~ node.alias ~ ": not built yet, skipped", info=true) }}
        {%- else -%}
            {%- do iceberg_maintain(relation, node.config.get('maintenance') or {}, node.config.get('tblproperties') or {},
                                    node.config.get('partition_by') is not none, nightly=remove_orphans) -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}

{#- Maintain one table with an explicit policy, e.g. from an operator's shell:
        dbt run-operation iceberg_maintain_table --args '{table: dwd.dim_users, policy: {rewrite_position_delete_files: {min_delete_files: 1}}}'
-#}
{% macro iceberg_maintain_table(table, policy, partitioned=false, nightly=true) %}
    {%- set parts = table.split('.') -%}
    {%- if parts | length != 2 -%}
        {{ exceptions.raise_compiler_error("iceberg_maintain_table: table must be '<schema>.<table>', got " ~ table) }}
    {%- endif -%}
    {%- set relation = api.Relation.create(schema=parts[0], identifier=parts[1], type='table') -%}
    {%- do iceberg_maintain(relation, policy, {}, partitioned, nightly) -%}
{% endmacro %}
