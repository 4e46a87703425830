{#- The run lock: one writing run (run, build, snapshot, seed, retry) per warehouse at a time.

    A one-row Iceberg table holds the lock's holder (dbt's invocation_id), its lease and the
    last load id handed out. Acquiring is a MERGE under Iceberg's serializable isolation: when
    two runs race, one commit wins and the other fails validation, so exactly one holds the
    lock. Each acquisition hands out the next load id: load ids only grow, and every ODS row a
    run writes carries its run's id, so models below ODS select new rows by load id instead of
    by a clock. A run that dies keeps the lock until its lease ends (var run_lock_ttl_minutes);
    an operator may end it early with `dbt run-operation release_run_lock --args '{holder: <id>}'`. -#}

{% macro run_lock_relation() %}
    {{ return(api.Relation.create(schema=generate_schema_name('ops', none), identifier='run_lock', type='table')) }}
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
    {%- set ttl = var('run_lock_ttl_minutes', 180) | int -%}
    {%- do run_query('create schema if not exists ' ~ lock.schema) -%}
    {#- CTAS: the first row exists from the table's first commit on, so racing runs meet in MERGE -#}
    {%- do run_query(
        "create table if not exists " ~ lock ~ " using iceberg"
        ~ " tblproperties ('format-version' = '2', 'write.merge.isolation-level' = 'serializable')"
        ~ " as select 'warehouse' as lock_name, cast(null as string) as holder,"
        ~ " cast(null as string) as holder_process, cast(0 as bigint) as load_id,"
        ~ " cast(null as timestamp) as acquired_at, cast(null as timestamp) as expires_at") -%}
    {#- reflect() may not stand in a MERGE condition: ask first, compare as literals -#}
    {%- set process = run_query(
        "select reflect('lakehouse.RunProcess', 'id'), holder,"
        ~ " cast(reflect('lakehouse.RunProcess', 'isGone', holder_process) as boolean),"
        ~ " load_id, acquired_at, expires_at < current_timestamp()"
        ~ " from " ~ lock ~ " where lock_name = 'warehouse'").rows[0] -%}
    {%- set dead_holder = process[1] if process[2] else none -%}
    {#- a holder whose process is gone or whose lease ended: the run this one may take over -#}
    {%- set previous = {'holder': process[1], 'load_id': process[3], 'acquired_at': process[4],
                        'why': 'its process died' if process[2] else 'its lease ended'}
                       if process[1] and (process[2] or process[5]) else none -%}
    {%- set merge -%}
        merge into {{ lock }} as held
        using (select 'warehouse' as lock_name) as request
        on held.lock_name = request.lock_name
        when matched and (
            held.holder is null
            or held.expires_at < current_timestamp()
            {%- if dead_holder %}
            or held.holder = '{{ dead_holder }}'  -- its process is gone (and nobody took over since)
            {%- endif %}
        ) then update set
            holder = '{{ invocation_id }}',
            holder_process = '{{ process[0] }}',
            load_id = held.load_id + 1,
            acquired_at = current_timestamp(),
            expires_at = current_timestamp() + make_interval(0, 0, 0, 0, 0, {{ ttl }})
    {%- endset -%}
    {%- if dead_holder -%}
        {{ log("run lock: the holder " ~ dead_holder ~ " died on this host; taking over", info=true) }}
    {%- endif -%}
    {%- do run_query(merge) -%}
    {%- set held = _run_lock_state() -%}
    {%- if held.holder != invocation_id -%}
        {{ exceptions.raise_compiler_error(
            "run lock: another run (invocation " ~ held.holder ~ ") holds " ~ lock ~ " since "
            ~ held.acquired_at ~ " UTC, until " ~ held.expires_at ~ " UTC; this run wrote nothing."
            ~ " Wait for it to finish. If that run died: dbt run-operation release_run_lock --args '{holder: "
            ~ held.holder ~ "}'") }}
    {%- endif -%}
    {%- if previous and held.load_id == previous.load_id + 1 -%}
        {%- do wap_record_abandoned(previous, previous.why ~ " holding the run lock; taken over by invocation " ~ invocation_id) -%}
    {%- endif -%}
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
    {%- if adapter.get_relation(lock.database, lock.schema, lock.identifier) is none -%}{{ return('') }}{%- endif -%}
    {%- if holder is not none -%}  {#- an operator ending another run's lease: that run is abandoned -#}
        {%- set held = _run_lock_state() -%}
        {%- if held.holder == owner -%}
            {%- do wap_record_abandoned(held, "its lease was ended by release_run_lock") -%}
        {%- endif -%}
    {%- endif -%}
    {%- do run_query(
        "update " ~ lock ~ " set holder = null, expires_at = current_timestamp()"
        ~ " where lock_name = 'warehouse' and holder = '" ~ owner ~ "'") -%}
    {{ log("run lock: released by invocation " ~ owner, info=true) }}
    {#- two commits a run: keep the lock table's history short (every 50th load) -#}
    {%- set load_id = run_query("select load_id from " ~ lock ~ " where lock_name = 'warehouse'").rows[0][0] -%}
    {%- if load_id % 50 == 0 -%}
        {%- do run_query("call " ~ (lock.database or 'spark_catalog') ~ ".system.expire_snapshots(table => '"
            ~ lock.schema ~ "." ~ lock.identifier ~ "', older_than => timestamp'"
            ~ modules.datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M:%S') ~ "', retain_last => 10)") -%}
    {%- endif -%}
{% endmacro %}

{#- The load id of this run, as a literal: what ODS stamps on every row it writes -#}
{% macro current_load_id() %}
    {%- if not execute or model.resource_type == 'unit_test' -%}{{ return('cast(null as bigint)') }}{%- endif -%}
    {%- if not run_takes_lock() -%}{{ return('cast(null as bigint)') }}{%- endif -%}
    {%- set held = _run_lock_state() -%}
    {%- if held.holder != invocation_id -%}
        {{ exceptions.raise_compiler_error("current_load_id: this run does not hold the run lock (holder: " ~ held.holder ~ ")") }}
    {%- endif -%}
    {{ return(held.load_id) }}
{% endmacro %}

{% macro _run_lock_state() %}
    {%- set rows = run_query(
        "select holder, load_id, acquired_at, expires_at from " ~ run_lock_relation()
        ~ " where lock_name = 'warehouse'").rows -%}
    {%- if rows | length != 1 -%}
        {{ exceptions.raise_compiler_error("run lock: expected one lock row in " ~ run_lock_relation() ~ ", found " ~ (rows | length)) }}
    {%- endif -%}
    {{ return({'holder': rows[0][0], 'load_id': rows[0][1], 'acquired_at': rows[0][2], 'expires_at': rows[0][3]}) }}
{% endmacro %}
