{#- CALL system.rewrite_manifests: regroups manifests by partition so scan planning reads
    few, well-clustered manifests instead of one per commit. -#}
{% macro rewrite_manifests(relation, use_caching=true) %}
    {{ return(adapter.dispatch('rewrite_manifests')(relation, use_caching)) }}
{% endmacro %}

{% macro lakehouse__rewrite_manifests(relation, use_caching) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {%- if use_caching is not boolean -%}
        {{ exceptions.raise_compiler_error("rewrite_manifests: use_caching must be true or false for " ~ table_name) }}
    {%- endif -%}
    call spark_catalog.system.rewrite_manifests(
        table => '{{ table_name }}',
        use_caching => {{ 'true' if use_caching else 'false' }}
    )
{% endmacro %}
