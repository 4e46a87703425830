{#- The run lock: one writing run (run, build, snapshot, seed, retry) per warehouse at a time.

    A one-row Iceberg table holds the lock's holder (dbt's invocation_id), its lease and the
    last load id handed out. Acquiring replaces that row in one Iceberg commit validated
    against the snapshot the decision read (lakehouse.RunLock in the adapter's java/ folder,
    Spark's serializable isolation without a MERGE's two jobs): when two runs race, one commit wins
    and the other fails validation, so exactly one holds the lock. Each acquisition hands out
    the next load id: load ids only grow, and every ODS row a run writes carries its run's id,
    so models below ODS select new rows by load id instead of by a clock. A run that dies
    keeps the lock until its lease ends (var run_lock_ttl_minutes); an operator may end it
    early with `dbt run-operation release_run_lock --args '{holder: <id>}'`. -#}

{% macro run_lock_relation() %}
    {{ return(api.Relation.create(schema=platform_schema(), identifier='run_lock', type='table')) }}
{% endmacro %}

{#- dbt commands that write tables; the others (test, compile, docs, run-operation...) only read -#}
{% macro run_takes_lock() %}
    {{ return(execute and flags.WHICH in ['run', 'build', 'snapshot', 'seed', 'retry']) }}
{% endmacro %}

{#- `operation`: taken by a run-operation that writes (the nightly maintenance), so it never
    compacts a table while a run's write-audit-publish branch is open. -#}
{% macro acquire_run_lock(operation=false) %}
    {%- if not execute or not (operation or run_takes_lock()) -%}{{ return('') }}{%- endif -%}
    {%- set lock = run_lock_relation() -%}
    {%- set ttl = lakehouse_var('run_lock_ttl_minutes') | int -%}
    {%- set call = "'acquire', '" ~ lock ~ "', '" ~ invocation_id ~ "', cast(" ~ ttl ~ " as bigint)" -%}
    {%- set held = _run_lock_call(call) -%}
    {%- if held.missing -%}  {#- a warehouse's first run -#}
        {%- do run_query('create schema if not exists ' ~ lock.schema) -%}
        {#- CTAS: the first row exists from the table's first commit on, so racing runs meet in
            the lock's validated commit -#}
        {%- do run_query(
            "create table if not exists " ~ lock ~ " using iceberg"
            ~ " tblproperties ('format-version' = '2', 'write.merge.isolation-level' = 'serializable')"
            ~ " as select 'warehouse' as lock_name, cast(null as string) as holder,"
            ~ " cast(null as string) as holder_process, cast(0 as bigint) as load_id,"
            ~ " cast(null as timestamp) as acquired_at, cast(null as timestamp) as expires_at") -%}
        {%- set held = _run_lock_call(call) -%}
    {%- endif -%}
    {%- set previous = held.taken_over -%}
    {%- if previous and previous.why == 'its process died' -%}
        {{ log("run lock: the holder " ~ previous.holder ~ " died on this host; taking over", info=true) }}
    {%- endif -%}
    {%- if held.holder != invocation_id -%}
        {{ exceptions.raise_compiler_error(
            "run lock: another run (invocation " ~ held.holder ~ ") holds " ~ lock ~ " since "
            ~ held.acquired_at ~ " UTC, until " ~ held.expires_at ~ " UTC; this run wrote nothing."
            ~ " Wait for it to finish. If that run died: dbt run-operation release_run_lock --args '{holder: "
            ~ held.holder ~ "}'") }}
    {%- endif -%}
    {%- if previous -%}
        {%- do wap_record_abandoned(previous, previous.why ~ " holding the run lock; taken over by invocation " ~ invocation_id) -%}
    {%- endif -%}
    {%- do adapter.note_run_lock(held.load_id, held.expires_at) -%}  {#- for current_load_id -#}
    {{ log("run lock: held by this run (invocation " ~ invocation_id ~ "), load id " ~ held.load_id, info=true) }}
{% endmacro %}

{#- on-run-end, whatever the outcome; an operator may pass `holder` to end a dead run's lease -#}
{% macro release_run_lock(holder=none) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- if holder is none and not run_takes_lock() -%}{{ return('') }}{%- endif -%}
    {%- set lock = run_lock_relation() -%}
    {%- set owner = holder or invocation_id -%}
    {%- if not modules.re.match('^[0-9a-fA-F-]+$', owner | string) -%}
        {{ exceptions.raise_compiler_error("release_run_lock: holder must be a dbt invocation id, got: " ~ owner) }}
    {%- endif -%}
    {#- an operator ending another run's lease: that run is abandoned (the nightly operation
        releases its own lease by its own id: nothing was abandoned) -#}
    {%- if holder is not none and holder != invocation_id -%}
        {%- set held = _run_lock_state() -%}
        {%- if held.missing -%}{{ return('') }}{%- endif -%}
        {%- if held.holder == owner -%}
            {%- do wap_record_abandoned(held, "its lease was ended by release_run_lock") -%}
        {%- endif -%}
    {%- endif -%}
    {%- set released = _run_lock_call("'release', '" ~ lock ~ "', '" ~ owner ~ "'") -%}
    {%- if owner == invocation_id -%}{%- do adapter.note_run_lock(none, none) -%}{%- endif -%}
    {%- if released.missing -%}{{ return('') }}{%- endif -%}
    {%- if not released.released -%}  {#- another holder took it over, or it was free -#}
        {{ log("run lock: not held by invocation " ~ owner ~ ", nothing released (holder: "
            ~ (released.holder or 'none') ~ ")", info=true) }}
        {{ return('') }}
    {%- endif -%}
    {{ log("run lock: released by invocation " ~ owner, info=true) }}
    {#- two commits a run: keep the lock table's history short (every 50th load) -#}
    {%- if released.load_id % 50 == 0 -%}
        {%- do run_query("call " ~ (lock.database or 'spark_catalog') ~ ".system.expire_snapshots(table => '"
            ~ lock.schema ~ "." ~ lock.identifier ~ "', older_than => timestamp'"
            ~ modules.datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M:%S') ~ "', retain_last => 10)") -%}
    {%- endif -%}
{% endmacro %}

{#- The load id of this run, as a literal: what ODS stamps on every row it writes. Noted by
    acquire_run_lock while its lease lasts (no other run can take the lock over before it
    ends: adapter.held_load_id); after that, read from the lock, which this run must still
    hold. -#}
{% macro current_load_id() %}
    {%- if not execute or model.resource_type == 'unit_test' -%}{{ return('cast(null as bigint)') }}{%- endif -%}
    {%- if not run_takes_lock() -%}{{ return('cast(null as bigint)') }}{%- endif -%}
    {%- set noted = adapter.held_load_id() -%}
    {%- if noted is not none -%}{{ return(noted) }}{%- endif -%}
    {%- set held = _run_lock_state() -%}
    {%- if held.holder != invocation_id -%}
        {{ exceptions.raise_compiler_error("current_load_id: this run does not hold the run lock (holder: " ~ held.holder ~ ")") }}
    {%- endif -%}
    {{ return(held.load_id) }}
{% endmacro %}

{#- The lock's row ({missing: true} before a warehouse's first run), read by the driver -#}
{% macro _run_lock_state() %}
    {{ return(_run_lock_call("'state', '" ~ run_lock_relation() ~ "'")) }}
{% endmacro %}

{#- lakehouse.RunLock (dbt/include/lakehouse/java): `arguments` are the method's name and its SQL arguments -#}
{% macro _run_lock_call(arguments) %}
    {%- set answer = run_query("select reflect('lakehouse.RunLock', " ~ arguments ~ ") from values (1)").rows[0][0] -%}
    {{ return(fromjson(answer)) }}
{% endmacro %}
