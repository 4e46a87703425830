{#- Drop a column of a model's Iceberg table, safely: refused while the model's configuration
    (unique_key, partition_by, write_order, backfill_by) or any model downstream names it, as
    dropping it would break them; otherwise a metadata change (no data file is rewritten, and
    snapshots before it still read it). on_schema_change `sync_all_columns` would drop it without
    these checks (the adapter's dbt/include/lakehouse/macros/materializations/incremental/
    on_schema_change.sql). Run it, then remove the column from the model's SQL (a model that
    still selects it would fail loudly, not drop it silently):
        dbt run-operation drop_column --args '{model: dwd_client__events, column: app_version}' -#}
{% macro drop_column(model, column) %}
    {%- set table = _model_table(model) -%}
    {%- do _column_type(table.relation, column) -%}
    {%- set pattern = '(?i)\\b' ~ modules.re.escape(column) ~ '\\b' -%}
    {%- set users = [] -%}
    {%- for key in ['unique_key', 'partition_by', 'write_order', 'backfill_by'] -%}
        {%- if modules.re.search(pattern, table.node.config.get(key) | string) -%}
            {%- do users.append(model ~ " (config " ~ key ~ ")") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- for node in graph.nodes.values()
        if table.node.unique_id in (node.depends_on or {}).get('nodes', []) -%}
        {#- a generic test names its column outside its code -#}
        {%- if modules.re.search(pattern, node.raw_code ~ ' ' ~ (node.column_name or '')) -%}
            {%- do users.append(node.resource_type ~ " " ~ node.name) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if users -%}
        {{ exceptions.raise_compiler_error(table.relation ~ "." ~ column ~ " is still used by: "
            ~ users | join(', ') ~ ". Remove it there first.") }}
    {%- endif -%}
    {%- do run_query('alter table ' ~ table.relation ~ ' drop column ' ~ adapter.quote(column)) -%}
    {{ log(table.relation ~ ": column " ~ column ~ " dropped (metadata only; older snapshots keep it)", info=true) }}
{% endmacro %}
