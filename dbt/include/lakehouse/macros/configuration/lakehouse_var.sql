{#- The adapter's vars, each with its default here and nowhere else. A project sets one in its
    dbt_project.yml (`vars:`) or for one run with --vars; docs/configuration.md says what each
    does. Asking for a name not in the table is a mistake in a macro, and fails. -#}
{% macro lakehouse_var_defaults() %}
    {{ return({
        'write_audit_publish': 'scheduled',
        'run_lock_ttl_minutes': 180,
        'wap_failed_branch_retention_hours': 72,
        'wap_run_tag_retention_hours': none,
        'wap_daily_tag_retention_days': 30,
        'snapshot_retention_hours': 72,
        'on_maintenance_error': 'warn',
        'maintenance_overrides': {},
        'retention_overrides': {},
        'maintenance_log': true,
        'maintenance_log_policy': {
            'rewrite_data_files': {'min_small_files': 5},
            'expire_snapshots': {'older_than_hours': 72, 'retain_last': 10}},
        'orphan_files_min_age_hours': 24,
        'merge_key_literals_limit': 10000,
    }) }}
{% endmacro %}

{#- The value of the adapter's var `name`: the project's or the run's, else its default. -#}
{% macro lakehouse_var(name) %}
    {%- set defaults = lakehouse_var_defaults() -%}
    {%- if name not in defaults -%}
        {{ exceptions.raise_compiler_error("lakehouse_var('" ~ name ~ "'): not a var of the adapter; its vars are "
            ~ (defaults.keys() | sort | join(', '))) }}
    {%- endif -%}
    {{ return(var(name, defaults[name])) }}
{% endmacro %}
