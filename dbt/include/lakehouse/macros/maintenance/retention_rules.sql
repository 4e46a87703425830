{#- The retention rule of each of `nodes` (models and snapshots: config `retention`, or var
    `retention_overrides` {model: rule | none} for one run), checked before anything is read or
    deleted: {unique_id: rule config}. A rule that cannot be applied, or shorter than a
    window the table itself or a model reading it re-reads (config `lookback_days`), stops the
    operation naming the table, the reader and the fix (dbt/adapters/lakehouse/retention.py,
    docs/retention.md). A load ledger's rule (config `load_ledger`) keeps its expiring lines'
    files and positions in the compact ledger (expired_load_ledger). -#}
{% macro retention_rules(nodes) %}
    {%- set overrides = lakehouse_var('retention_overrides') or {} -%}
    {%- set rules = {} -%}
    {%- for node in nodes -%}
        {%- set config = overrides[node.name] if node.name in overrides else node.config.get('retention') -%}
        {%- set table = node.schema ~ '.' ~ node.alias -%}
        {%- set rule = adapter.retention_rule(config, table) -%}
        {%- if rule is not none -%}
            {%- set lookbacks = {node.name: node.config.get('lookback_days')} -%}
            {%- for reader in graph.nodes.values() if node.unique_id in reader.depends_on.nodes -%}
                {%- do lookbacks.update({reader.name: reader.config.get('lookback_days')}) -%}
            {%- endfor -%}
            {%- set refused = adapter.retention_refusal(table, rule, lookbacks) -%}
            {%- if refused -%}{{ exceptions.raise_compiler_error(refused) }}{%- endif -%}
            {%- do rules.update({node.unique_id: config}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(rules) }}
{% endmacro %}
