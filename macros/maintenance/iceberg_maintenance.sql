{#- The one entry point for table maintenance, run as a post-hook of every Iceberg model.
    Reads the model's `maintenance` config (folder defaults in dbt_project.yml, overrides in
    a model's config) and runs the procedures it asks for, logging one line per model. -#}
{% macro iceberg_maintenance(relation=this) %}
    {%- if not execute or model.config.materialized == 'ephemeral' -%}{{ return('') }}{%- endif -%}
    {%- set policy = config.get('maintenance') or {} -%}
    {%- set known = ['rewrite_data_files', 'expire_snapshots'] -%}
    {%- for step in policy if step not in known -%}
        {{ exceptions.raise_compiler_error("maintenance of " ~ relation ~ ": unknown step '" ~ step ~ "'; known: " ~ (known | join(', '))) }}
    {%- endfor -%}
    {%- set done = [] -%}
    {%- set rewrite = policy.get('rewrite_data_files') -%}
    {%- if rewrite -%}
        {%- set result = run_query(rewrite_data_files(relation, **rewrite)) -%}
        {%- do done.append('rewrite_data_files ' ~ (rewrite.strategy or 'binpack') ~ ': ' ~ result.columns[0].values()[0] ~ ' files -> ' ~ result.columns[1].values()[0]) -%}
    {%- endif -%}
    {%- set expire = policy.get('expire_snapshots') -%}
    {%- if expire -%}
        {%- set result = run_query(expire_snapshots(relation, **expire)) -%}
        {%- do done.append('expire_snapshots: ' ~ result.columns['deleted_manifest_lists_count'].values()[0] ~ ' snapshots expired') -%}
    {%- endif -%}
    {{ log("maintenance " ~ relation ~ ": " ~ (done | join('; ') if done else 'no policy'), info=true) }}
    {{ return('') }}
{% endmacro %}
