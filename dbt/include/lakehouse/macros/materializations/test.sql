{#- Override: dbt's test query reads main; in a write-audit-publish run it must read the run's branch. -#}
{#- dbt's test query, read on the run's branch (the embedded targets share one session whose
    setting already holds the branch; a Thrift connection gets it here, by wap_session in
    write_audit_publish/write_audit_publish.sql). -#}
{% macro lakehouse__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) -%}
    {%- do wap_session() -%}
    {{ default__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) }}
{%- endmacro %}
