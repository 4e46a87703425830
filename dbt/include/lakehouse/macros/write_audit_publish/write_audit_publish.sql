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

{#- on-run-start, after acquire_run_lock: point the session's writes at the run's branch and
    ready the tables the run writes for it, or clear a branch a crashed in-process run left
    behind. -#}
{% macro wap_begin() %}
    {%- if not execute or not run_takes_lock() -%}{{ return('') }}{%- endif -%}
    {%- if not wap_requested() -%}
        {%- do run_query('reset spark.wap.branch') -%}
        {%- do adapter.note_wap_branch(none) -%}
        {{ return('') }}
    {%- endif -%}
    {%- set branch = wap_branch_of(current_load_id()) -%}
    {%- do run_query('set spark.wap.branch = ' ~ branch) -%}
    {%- do adapter.note_wap_branch(branch) -%}  {#- for each writing node's pre_model_hook (impl.py) -#}
    {#- every table the run will write, readied for the branch in one statement -#}
    {%- set selected = graph.nodes.values() | selectattr('unique_id', 'in', selected_resources) | list -%}
    {%- do adapter.prepare_branch_tables(selected, branch) -%}
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

{#- The run's branch on this connection, for a statement that reads or stamps it outside a
    model's write: the start of every test's query (the adapter's lakehouse__get_test_sql) and
    a model whose rendering reads its branch. On the embedded targets the shared session's
    setting already holds it (wap_begin); on a Thrift server each connection is a Spark
    session of its own. Models, seeds and snapshots need no hook: the adapter's
    pre_model_hook sets the branch and readies their table (impl.py). -#}
{% macro wap_session() %}
    {%- if not execute or not wap_requested() or wap_active_branch() is not none -%}{{ return('') }}{%- endif -%}
    {%- set branch = adapter.wap_branch() or _wap_run_branch() -%}
    {%- if branch is not none -%}
        {%- do run_query('set spark.wap.branch = ' ~ branch) -%}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{#- Whether `node` writes an Iceberg table that write-audit-publish keeps on the run's branch:
    a model materialized as a table or incremental, a snapshot, a seed (the adapter's
    write_audit_publish.writes_table). -#}
{% macro wap_writes_table(node) %}
    {{ return(adapter.wap_writes_table(node)) }}
{% endmacro %}

{#- The branch of the run this invocation holds the lock for, or none (no lock table, or
    another holder: e.g. a project that does not take the lock). -#}
{% macro _wap_run_branch() %}
    {%- set lock = _run_lock_state() -%}
    {{ return(wap_branch_of(lock.load_id) if not lock.missing and lock.holder == invocation_id else none) }}
{% endmacro %}
