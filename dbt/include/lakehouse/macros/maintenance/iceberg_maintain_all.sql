{#- Nightly maintenance outside `dbt run`:
        dbt run-operation iceberg_maintain_all
        dbt run-operation iceberg_maintain_all --args '{select: [dim_users__state, dim_videos__state]}'
        dbt run-operation iceberg_maintain_all --args '{remove_orphans: false}'
    Applies each Iceberg model's and snapshot's own policy (var maintenance_overrides applied,
    as in the post-hook) with a full health read (the same triggers as
    its post-hook, without the cheap gate) and, because it runs nightly, also the steps too
    slow for every run (orphan-file removal, unless remove_orphans is false:
    docs/running-dbt.md schedules that one weekly) and, first, each one's retention rule
    (retention_rules: every rule is checked before any table is touched; docs/retention.md).
    Then maintains the maintenance log itself.
    A failing table warns and the others still run; the operation fails at the end if a
    table whose `on_maintenance_error` is `fail` failed.
    It holds the run lock throughout: a compaction on main while a run's write-audit-publish
    branch is open would make that run's publish impossible. -#}
{% macro iceberg_maintain_all(select=none, remove_orphans=true) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set wanted = none if select is none else ([select] if select is string else select) -%}
    {%- set nodes = [] -%}
    {%- for node in graph.nodes.values()
          if node.resource_type in ['model', 'snapshot'] and node.config.get('file_format') == 'iceberg'
          and node.config.materialized in ['table', 'incremental', 'snapshot']
          and (wanted is none or node.name in wanted) -%}
        {%- do nodes.append(node) -%}
    {%- endfor -%}
    {%- set retention = retention_rules(nodes) -%}
    {%- do acquire_run_lock(operation=true) -%}
    {%- set failed = [] -%}
    {%- set log_rows = [] -%}
    {%- set tables = [] -%}
    {%- for node in nodes -%}
        {%- do tables.append({'node': node, 'relation': adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)}) -%}
    {%- endfor -%}
    {#- every built table's cheap read in one statement -#}
    {%- set states = iceberg_table_states(tables | rejectattr('relation', 'none') | map(attribute='relation') | list) -%}
    {%- for table in tables -%}
        {%- set node, relation = table.node, table.relation -%}
        {%- if relation is none -%}
            {{ log("maintenance " ~ node.schema ~ "." ~ node.alias ~ ": not built yet, skipped", info=true) }}
        {%- else -%}
            {%- set on_error = node.config.get('on_maintenance_error') or lakehouse_var('on_maintenance_error') -%}
            {%- set policy = maintenance_policy(node.name, node.config.get('maintenance')) -%}
            {%- if not remove_orphans -%}{%- do policy.pop('remove_orphan_files', none) -%}{%- endif -%}
            {%- set run = iceberg_maintain(relation, policy, node.config.get('tblproperties') or {},
                                           nightly=true, on_error='warn', trigger='nightly', log_rows=log_rows,
                                           state=states[relation | string], retention=retention.get(node.unique_id),
                                           load_ledger=node.config.get('load_ledger') or false) -%}
            {%- if run.outcome.errors and on_error == 'fail' -%}
                {%- do failed.append(relation ~ ': ' ~ (run.outcome.errors | join('; '))) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do iceberg_maintenance_log_flush(log_rows) -%}
    {%- if wanted is none -%}
        {%- set log_table = iceberg_maintenance_log_relation() -%}
        {%- if adapter.get_relation(database=none, schema=log_table.schema, identifier=log_table.identifier) is not none -%}
            {%- do iceberg_maintain(log_table, lakehouse_var('maintenance_log_policy'),
                    {}, nightly=true, on_error='warn', trigger='nightly') -%}
        {%- endif -%}
    {%- endif -%}
    {%- do release_run_lock(holder=invocation_id) -%}
    {%- if failed -%}
        {{ exceptions.raise_database_error("nightly maintenance failed (on_maintenance_error: fail): " ~ (failed | join(' / '))) }}
    {%- endif -%}
{% endmacro %}
