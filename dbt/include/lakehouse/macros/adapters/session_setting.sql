{#- A setting of the Spark session this connection runs on, or none when unset or '<undefined>'.
    Read in this process on the embedded targets (adapter.embedded_session_setting, no
    statement); a Thrift connection asks its server's session with `set <key>`. Used by
    lakehouse__list_relations_without_caching and by the project's macros (write-audit-publish,
    lineage). -#}
{% macro session_setting(key) %}
    {%- set value = adapter.embedded_session_setting(key) -%}
    {%- if value is none -%}  {#- a Thrift connection: ask its session -#}
        {%- set value = run_query('set ' ~ key).rows[0][1] -%}
    {%- endif -%}
    {{ return(value if value and value != '<undefined>' else none) }}
{% endmacro %}
