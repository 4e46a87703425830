{#- Write-audit-publish: a writing run's models write on an Iceberg branch named after the run,
    its tests read that branch, and readers of `main` see nothing of the run until on-run-end
    publishes it (wap_publish). See docs/write-audit-publish.md.

    var write_audit_publish:
      scheduled (default)  on for a run without --select/--exclude (the default selector
                           every_batch, or --selector ...): the schedules; off for a
                           developer's `dbt run -s my_model`, which sees its table at once
      true | false         on | off for every writing run -#}

{% macro wap_requested() %}
    {%- if not run_takes_lock() -%}{{ return(false) }}{%- endif -%}
    {%- set setting = lakehouse_var('write_audit_publish') | string | lower -%}
    {%- if setting in ['true', 'false'] -%}{{ return(setting == 'true') }}{%- endif -%}
    {%- if setting != 'scheduled' -%}
        {{ exceptions.raise_compiler_error("var write_audit_publish must be scheduled, true or false, got '" ~ setting ~ "'") }}
    {%- endif -%}
    {%- set args = invocation_args_dict -%}
    {{ return(not args.get('select') and not args.get('exclude') and not args.get('models')) }}
{% endmacro %}

{#- The branch of this run: `wap_<load id>` (the run lock hands out the load id). -#}
{% macro wap_branch_of(load_id) %}{{ return('wap_' ~ load_id) }}{% endmacro %}

{#- on-run-start, after acquire_run_lock: point the session's writes at the run's branch, or
    clear a branch a crashed in-process run left behind. -#}
{% macro wap_begin() %}
    {%- if not execute or not run_takes_lock() -%}{{ return('') }}{%- endif -%}
    {%- if not wap_requested() -%}
        {%- do run_query('reset spark.wap.branch') -%}
        {{ return('') }}
    {%- endif -%}
    {%- set branch = wap_branch_of(current_load_id()) -%}
    {%- do run_query('set spark.wap.branch = ' ~ branch) -%}
    {%- do last_published_load() -%}  {#- read once here, not by the first tests at once -#}
    {{ log("write-audit-publish: this run writes on branch " ~ branch ~ "; readers of main see it once every model and error test passed", info=true) }}
    {{ return('') }}
{% endmacro %}

{#- The branch this connection writes on, or none. Reads the session's setting: set once by
    wap_begin for the shared session of the embedded targets, per connection on a Thrift
    server (wap_session). -#}
{% macro wap_active_branch() %}
    {%- if not execute -%}{{ return(none) }}{%- endif -%}
    {{ return(session_setting('spark.wap.branch')) }}
{% endmacro %}

{#- pre-hook of every model and snapshot (dbt_project.yml) and the start of every test's query
    (the adapter's lakehouse__get_test_sql). On a Thrift server each connection is a Spark
    session of its own, so the run's branch is set on it. The model's table, when it exists,
    gets write.wap.enabled (a table built before write-audit-publish: without it Iceberg would
    write main) and the branch, created from main before the first write: Iceberg 1.10.2 starts
    the summary totals (total-data-files, total-records, ...) of a snapshot that creates its
    branch from zero, and maintenance decides on those totals (docs/findings.md). -#}
{% macro wap_session(relation=none) %}
    {%- if not execute or not wap_requested() -%}{{ return('') }}{%- endif -%}
    {%- set branch = wap_active_branch() -%}
    {%- if branch is none -%}
        {#- a connection of its own (Thrift): the run's branch, if this run holds the lock -#}
        {%- set branch = _wap_run_branch() -%}
        {%- if branch is not none -%}
            {%- do run_query('set spark.wap.branch = ' ~ branch) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if branch is none or relation is none or not wap_writes_table(model) -%}
        {{ return('') }}
    {%- endif -%}
    {%- set existing = load_relation(relation) -%}
    {%- if existing is none or existing.is_view -%}{{ return('') }}{%- endif -%}
    {#- one statement for both (dbt/include/lakehouse/java/lakehouse/TableState.java) -#}
    {%- set prepared = run_query("select reflect('lakehouse.TableState', 'prepareBranch', '" ~ relation
        ~ "', '" ~ branch ~ "') from values (1)").rows[0][0] -%}
    {%- if 'wap-enabled' in prepared -%}
        {{ log(relation ~ ": write.wap.enabled set (write-audit-publish)", info=true) }}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{#- Whether `node` writes an Iceberg table that write-audit-publish keeps on the run's branch:
    a model materialized as a table or incremental, a snapshot, a seed. -#}
{% macro wap_writes_table(node) %}
    {{ return(node.resource_type in ['model', 'snapshot', 'seed'] and node.config.get('file_format') == 'iceberg'
        and node.config.get('materialized') in ['table', 'incremental', 'snapshot', 'seed']) }}
{% endmacro %}

{#- The branch of the run this invocation holds the lock for, or none (no lock table, or
    another holder: e.g. a project that does not take the lock). -#}
{% macro _wap_run_branch() %}
    {%- set lock = _run_lock_state() -%}
    {{ return(wap_branch_of(lock.load_id) if not lock.missing and lock.holder == invocation_id else none) }}
{% endmacro %}
