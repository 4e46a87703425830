{#- on-run-end: OpenLineage events for the models and snapshots this invocation ran (the
    adapter's emit_lineage, dbt/adapters/lakehouse/lineage.py). Off with
    --vars '{openlineage: false}'. A failure to send is logged, never raised. -#}
{% macro emit_lineage() %}
    {%- if not execute or not (var('openlineage') | string | lower in ['true', '1', 'yes']) -%}{{ return('') }}{%- endif -%}
    {%- set nodes = {} -%}
    {%- do nodes.update(graph.nodes) -%}
    {%- do nodes.update(graph.sources) -%}
    {%- set uri = session_setting('spark.sql.catalog.spark_catalog.uri') -%}
    {%- set catalog = uri if uri else 'hive://' ~ (session_setting('spark.hadoop.hive.metastore.uris') or 'embedded').split('//')[-1] -%}
    {%- set error = adapter.emit_lineage(results, nodes, catalog) -%}
    {%- if error -%}
        {{ log("openlineage: no event sent (the run is unaffected): " ~ error, info=true) }}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}
