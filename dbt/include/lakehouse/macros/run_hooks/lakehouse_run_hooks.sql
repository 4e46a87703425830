{#- The platform's on-run-start and on-run-end hooks in their order, for a project that adds
    nothing between them (docs/using-the-adapter.md). A project with steps of its own between
    them lists the parts instead, as this repository's warehouse does (dbt_project.yml).
    dbt skips the hooks after one that fails, so one hook calling the parts in order behaves
    as the parts listed one by one. -#}

{#- on-run-start: the run lock (one writing run at a time; hands out the load id), then the
    run's write-audit-publish branch. -#}
{% macro lakehouse_run_start() %}
    {%- do acquire_run_lock() -%}
    {%- do wap_begin() -%}
    {{ return('') }}
{% endmacro %}

{#- on-run-end: publish the run's branch when every model and error test passed, release the
    lock, then fail the run if it did not publish (naming its branch). -#}
{% macro lakehouse_run_end() %}
    {%- do wap_publish() -%}
    {%- do release_run_lock() -%}
    {%- do wap_fail_unpublished() -%}
    {{ return('') }}
{% endmacro %}
