{#- Maintain one table with an explicit policy, e.g. from an operator's shell:
        dbt run-operation iceberg_maintain_table --args '{table: dwd.dim_users__state, policy: {rewrite_position_delete_files: {min_delete_files: 1}}}'
    The table's partitioning is detected by the health read. `nightly` (default
    true) makes the full health read and runs orphan removal. `on_maintenance_error`: warn
    (default: the operation succeeds and the failure is logged) or fail. `retention`: a
    retention rule ({column, keep_days}) applied first when `nightly`; on a model's table that
    is a load ledger (ODS), the expiring lines' files and positions go to the compact ledger
    first, as in the nightly operation. -#}
{% macro iceberg_maintain_table(table, policy, nightly=true, on_maintenance_error='warn', retention=none) %}
    {%- set parts = table.split('.') -%}
    {%- if parts | length != 2 -%}
        {{ exceptions.raise_compiler_error("iceberg_maintain_table: table must be '<schema>.<table>', got " ~ table) }}
    {%- endif -%}
    {%- set relation = api.Relation.create(schema=parts[0], identifier=parts[1], type='table') -%}
    {%- do _iceberg_table_name(relation) -%}
    {#- a model's table that is a load ledger keeps its expiring lines in the compact ledger -#}
    {%- set ledgers = [] -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' and node.config.get('load_ledger')
          and (node.schema ~ '.' ~ node.alias) | lower == table | lower -%}
        {%- do ledgers.append(node) -%}
    {%- endfor -%}
    {%- do iceberg_maintain(relation, policy, {}, nightly=nightly, on_error=on_maintenance_error, trigger='operation',
                            retention=retention, load_ledger=ledgers | length > 0) -%}
{% endmacro %}
