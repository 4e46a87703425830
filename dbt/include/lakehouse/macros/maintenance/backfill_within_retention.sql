{#- Stops a backfill of the running model whose range starts before a day that retention has
    deleted, or will delete, from the model or from a model it reads (config `retention`, or
    var `retention_overrides`): those days cannot be recomputed, and writing them again would
    bring expired rows back. The error names the table, its rule and the oldest day a backfill
    can start at (docs/retention.md). `backfill`: {start, end, days}, as model_backfill returns. -#}
{% macro backfill_within_retention(backfill) %}
    {%- set overrides = lakehouse_var('retention_overrides') or {} -%}
    {%- set nodes = [model] -%}
    {%- for unique_id in model.depends_on.nodes if unique_id in graph.nodes -%}
        {%- do nodes.append(graph.nodes[unique_id]) -%}
    {%- endfor -%}
    {%- for node in nodes -%}
        {%- set config = overrides[node.name] if node.name in overrides else node.config.get('retention') -%}
        {%- set table = node.schema ~ '.' ~ node.alias -%}
        {%- set rule = adapter.retention_rule(config, table) -%}
        {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) if rule is not none else none -%}
        {%- if relation is not none -%}
            {%- set newest = run_query('select cast(max(`' ~ rule.column ~ '`) as string) from ' ~ relation).columns[0].values()[0] -%}
            {%- set refused = adapter.retention_backfill_refusal(table, rule, newest, backfill.start, node.unique_id == model.unique_id) -%}
            {%- if refused -%}
                {{ exceptions.raise_compiler_error("backfill of " ~ this ~ " from " ~ backfill.start ~ ": " ~ refused) }}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}
