{#- The one entry point for table maintenance: a post-hook of every Iceberg model (see
    dbt_project.yml) and the nightly `iceberg_maintain_all` operation both call
    `iceberg_maintain`. A model's `maintenance` config (folder defaults, model overrides)
    says what it wants; the table's measured health decides what runs now. Runs after the
    model's write committed: with `on_maintenance_error: warn` (the default) a failed step
    warns and is logged, and the model stays successful.
    For one run, var `maintenance_overrides` ({model: {step: settings | none}}) replaces a
    step's settings (none: leaves the step out), e.g.
        --vars '{maintenance_overrides: {dim_users: {rewrite_data_files: {min_small_files: 2}}}}' -#}
{% macro iceberg_maintenance(relation=this) %}
    {%- if not execute or config.get('materialized') == 'view' -%}{{ return('') }}{%- endif -%}
    {%- set policy = maintenance_policy(model.name, config.get('maintenance')) -%}
    {%- set branch = wap_active_branch() -%}
    {%- if branch -%}
        {#- a compaction on main now would make the publish impossible (main would no longer be an
            ancestor of the branch): wap_publish maintains the table once it is published. A
            misconfigured policy still fails the model here, not after the publish. -#}
        {%- do iceberg_maintenance_decision(relation, policy, config.get('tblproperties') or {}, validate_only=true) -%}
        {{ log(relation ~ ": maintenance after the publish of branch " ~ branch, info=true) }}
        {{ return('') }}
    {%- endif -%}
    {%- do iceberg_maintain(relation, policy, config.get('tblproperties') or {}, nightly=false,
                            on_error=config.get('on_maintenance_error') or lakehouse_var('on_maintenance_error'),
                            trigger='post-hook') -%}
    {{ return('') }}
{% endmacro %}

{#- A model's maintenance policy for this run: its config with var maintenance_overrides applied. -#}
{% macro maintenance_policy(model_name, configured) %}
    {%- set policy = dict(configured or {}) -%}
    {%- set overrides = (lakehouse_var('maintenance_overrides') or {}).get(model_name) or {} -%}
    {%- for step, settings in overrides.items() -%}
        {%- if settings is none -%}
            {%- do policy.pop(step, none) -%}
        {%- else -%}
            {%- do policy.update({step: settings}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(policy) }}
{% endmacro %}
