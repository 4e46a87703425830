{#- A setting of the Spark session this connection runs on, or none when unset. Read in
    this process on the embedded targets (no statement); a Thrift connection asks its
    server's session with `set <key>`. -#}
{% macro session_setting(key) %}
    {%- set value = adapter.embedded_session_setting(key) -%}
    {%- if value is none -%}  {#- a Thrift connection: ask its session -#}
        {%- set value = run_query('set ' ~ key).rows[0][1] -%}
    {%- endif -%}
    {{ return(value if value and value != '<undefined>' else none) }}
{% endmacro %}
