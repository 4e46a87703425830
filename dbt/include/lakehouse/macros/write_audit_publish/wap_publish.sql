{#- on-run-end of a write-audit-publish run, before the run lock is released:

    green (every model and snapshot succeeded, every error-severity test passed; a `warn`
    never blocks): in one commit per table, fast-forward its main to the run's branch, tag it
    `run_<load id>` and `day_<yyyymmdd>` and drop the branch, upstream first (dbt finishes a
    node only after its upstreams, so `results` is in that order); then run the maintenance
    the models' post-hooks deferred, all under the run lock.
    red: no main moves; the branch stays for inspection (dropped by a later green run after
    var wap_failed_branch_retention_hours).
    A main that moved since the run began (a commit outside the run lock) stops the publish
    at that table: main is never overwritten, the tables before it stay published (each one's
    inputs are published too), and the next run redoes the rest from main.
    Each outcome is a row of ops.wap_runs (`dbt run-operation published_runs`). -#}
{% macro wap_publish() %}
    {%- if not execute or not run_takes_lock() or not wap_requested() -%}{{ return('') }}{%- endif -%}
    {%- set lock = _run_lock_state() -%}
    {%- if lock.missing or lock.holder != invocation_id -%}{{ return('') }}{%- endif -%}
    {%- do run_query('reset spark.wap.branch') -%}  {#- from here on this run writes main -#}
    {%- set branch = wap_branch_of(lock.load_id) -%}
    {%- set candidates = _wap_candidates() -%}
    {%- set failed = [] -%}
    {%- for result in results if result.status in ['error', 'fail', 'skipped', 'runtime error'] -%}
        {%- do failed.append(result.node.name ~ ' (' ~ result.status ~ ')') -%}
    {%- endfor -%}
    {%- if failed -%}
        {%- do _wap_keep(lock, branch, _wap_touched_tables(candidates, branch), 'failed', failed | length ~ ' failed: ' ~ (failed | join(', '))) -%}
        {{ return('') }}
    {%- endif -%}

    {#- 1. every publish first (one commit per table: fast-forward, tags, branch dropped): the
        window in which readers may see some tables of the run and not others is as short as
        the commits themselves -#}
    {%- set expired = _wap_expired_branches() -%}
    {%- set published = [] -%}
    {%- set outcomes = _wap_publish_tables(candidates, branch, lock, expired) -%}
    {%- for table in candidates -%}
        {%- set outcome = outcomes[loop.index0] -%}
        {%- if outcome.stop -%}
            {%- set kept = _wap_touched_tables(candidates[loop.index0:], branch) -%}
            {%- do _wap_keep(lock, branch, kept, 'conflict', outcome.stop, published) -%}
            {%- do _wap_maintain_published(published) -%}
            {{ return('') }}
        {%- endif -%}
        {%- if outcome.head is not none -%}
            {%- do published.append({'relation': table.relation, 'node': table.node, 'head': outcome.head}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set maintenance_failed = _wap_maintain_published(published) -%}
    {%- do _wap_record(lock, branch, 'published', published, ('maintenance failed after the publish'
        ~ ' (on_maintenance_error: fail): ' ~ (maintenance_failed | join('; '))) if maintenance_failed
        else 'every model and error test passed') -%}
    {{ log("write-audit-publish: run " ~ lock.load_id ~ " published " ~ published | length ~ " tables, tagged run_" ~ lock.load_id, info=true) }}
{% endmacro %}

{#- The Iceberg tables this run's models, snapshots and seeds wrote, in the order they finished:
    [{relation, node}]. -#}
{% macro _wap_candidates() %}
    {%- set candidates = [] -%}
    {%- for result in results if result.status == 'success' and wap_writes_table(result.node) -%}
        {%- do candidates.append({'node': result.node, 'relation': api.Relation.create(
            database=result.node.database, schema=result.node.schema, identifier=result.node.alias, type='table')}) -%}
    {%- endfor -%}
    {{ return(candidates) }}
{% endmacro %}

{#- The candidates that have the run's branch (what a red or stopped run keeps), read from
    each table's refs: [{relation, node, main, head}]. -#}
{% macro _wap_touched_tables(candidates, branch) %}
    {%- set touched = [] -%}
    {%- for table in candidates -%}
        {%- set heads = {} -%}
        {%- for row in run_query("select name, snapshot_id from " ~ table.relation ~ ".refs where type = 'BRANCH'").rows -%}
            {%- do heads.update({row[0]: row[1]}) -%}
        {%- endfor -%}
        {%- if branch in heads -%}
            {%- do touched.append({'relation': table.relation, 'node': table.node, 'main': heads.get('main'), 'head': heads[branch]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(touched) }}
{% endmacro %}

{% macro _wap_expired_branches() %}
    {%- set runs = wap_runs_relation() -%}
    {%- if load_relation(runs) is none -%}{{ return([]) }}{%- endif -%}
    {%- set rows = run_query("select branch from " ~ runs ~ " where status != 'published' and finished_at < current_timestamp() - make_interval(0, 0, 0, 0, "
        ~ lakehouse_var('wap_failed_branch_retention_hours') | int ~ ")").rows -%}
    {{ return(rows | map(attribute=0) | list) }}
{% endmacro %}

{#- Publish the tables in one statement, one commit per table (dbt/include/lakehouse/java/lakehouse/Publish.java):
    main fast-forwarded to the branch, tagged run_<load id> and day_<yyyymmdd>, the branch and
    expired branches of red runs dropped. Returns an outcome per table in order, up to the
    first that must stop: {head} (none: the run did not write this table) or {stop: why it
    must not}. Iceberg refuses (and commits nothing) when main is not an ancestor of the
    branch: main moved since the run began; the helper publishes nothing after such a table. -#}
{% macro _wap_publish_tables(candidates, branch, lock, expired) %}
    {%- set names = candidates | map(attribute='relation') | map('string') | list -%}
    {%- if not names -%}{{ return([]) }}{%- endif -%}
    {%- set hour_ms = 3600000 -%}
    {#- in milliseconds from the hours (or days) as given: 0.5 h is 1,800,000 ms, not 0 -#}
    {%- set run_tag_ms = ((lakehouse_var('wap_run_tag_retention_hours') or lakehouse_var('snapshot_retention_hours')) | float * hour_ms) | int -%}
    {%- set day_tag_ms = (lakehouse_var('wap_daily_tag_retention_days') | float * 24 * hour_ms) | int -%}
    {%- if run_tag_ms <= 0 or day_tag_ms <= 0 -%}
        {{ return([{'stop': "the tags of run " ~ lock.load_id ~ " need a retention above 0 (vars wap_run_tag_retention_hours or snapshot_retention_hours, and wap_daily_tag_retention_days): main left untouched"}]) }}
    {%- endif -%}
    {%- set call = "select reflect('lakehouse.Publish', 'publishAll', '" ~ (names | join(',')) ~ "', '" ~ branch
        ~ "', 'run_" ~ lock.load_id ~ "', cast(" ~ run_tag_ms ~ " as bigint)"
        ~ ", 'day_" ~ modules.datetime.datetime.utcnow().strftime('%Y%m%d') ~ "', cast("
        ~ day_tag_ms ~ " as bigint), '" ~ (expired | join(',')) ~ "') from values (1)" -%}
    {%- set done = _maintenance_execute(call) -%}
    {%- if done.error -%}
        {{ return([{'stop': "the publish of " ~ names[0] ~ " to " ~ branch ~ " failed, main left untouched: " ~ done.error}]) }}
    {%- endif -%}
    {%- set outcomes = [] -%}
    {%- for line in done.table.rows[0][0].split('\n') if line -%}
        {%- set relation, answer, detail = (line ~ '  ').split(' ', 2) -%}
        {%- set detail = detail.strip() -%}
        {%- if answer == 'moved' -%}
            {%- do outcomes.append({'stop': "main of " ~ relation ~ " moved since the run began (its snapshot " ~ detail
                ~ " is not an ancestor of branch " ~ branch ~ "): a commit outside the run lock, e.g. a"
                ~ " compaction. main was left untouched; the next run redoes this run's work from main"}) -%}
        {%- elif answer == 'failed' -%}
            {%- do outcomes.append({'stop': "the publish of " ~ relation ~ " to " ~ branch ~ " failed, main left untouched: " ~ detail}) -%}
        {%- else -%}
            {%- do outcomes.append({'head': (detail | int) if answer == 'published' else none}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(outcomes) }}
{% endmacro %}

{#- The maintenance the published tables' post-hooks deferred, on main, its log rows written
    in one commit. Returns the failures of tables whose on_maintenance_error is fail (the run
    fails after the lock is released: an on-run-end hook that raises would skip the release). -#}
{% macro _wap_maintain_published(published) %}
    {%- set failed = [] -%}
    {%- set log_rows = [] -%}
    {%- set maintained = [] -%}
    {%- for table in published if table.node.config.get('maintenance') -%}{%- do maintained.append(table) -%}{%- endfor -%}
    {#- every table's cheap read in one statement -#}
    {%- set states = iceberg_table_states(maintained | map(attribute='relation') | list) -%}
    {%- for table in maintained -%}
        {%- set config = table.node.config -%}
        {%- set run = iceberg_maintain(table.relation, maintenance_policy(table.node.name, config.get('maintenance')),
                                       config.get('tblproperties') or {}, nightly=false, on_error='warn',
                                       trigger='post-publish', log_rows=log_rows, state=states[table.relation | string]) -%}
        {%- if run.outcome.errors and (config.get('on_maintenance_error') or lakehouse_var('on_maintenance_error')) == 'fail' -%}
            {%- do failed.append(table.relation ~ ': ' ~ (run.outcome.errors | join('; '))) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do iceberg_maintenance_log_flush(log_rows) -%}
    {{ return(failed) }}
{% endmacro %}

{#- A red or conflicting run: main of every listed table stays as it was; say how to look. -#}
{% macro _wap_keep(lock, branch, kept, status, reason, published=[]) %}
    {%- do _wap_record(lock, branch, status, published, reason) -%}
    {%- set names = kept | map(attribute='relation') | map('string') | list -%}
    {%- set lines = [
        "write-audit-publish: run " ~ lock.load_id ~ " " ~ ("not published" if status == 'failed' else "publish stopped") ~ ": " ~ reason ~ ".",
        "  main is unchanged on " ~ ((names | join(', ')) or 'every table') ~ (("; published before the stop: " ~ (published | map(attribute='relation') | map('string') | join(', '))) if published else '') ~ ".",
        "  Branch " ~ branch ~ " is kept for " ~ lakehouse_var('wap_failed_branch_retention_hours') ~ " h (var wap_failed_branch_retention_hours); a later published run drops it.",
        "  Inspect: select * from " ~ (names[0] if names else '<table>') ~ " version as of '" ~ branch ~ "'",
        "  Drop now: dbt run-operation wap_drop_branch --args '{branch: " ~ branch ~ "}'"] -%}
    {%- if status == 'failed' -%}
        {{ log(lines | join('\n'), info=true) }}
    {%- else -%}
        {%- do exceptions.warn(lines | join('\n')) -%}
    {%- endif -%}
{% endmacro %}

{#- ops.wap_runs: one row per write-audit-publish run. -#}
{% macro wap_runs_relation() %}
    {{ return(api.Relation.create(schema=platform_schema(), identifier='wap_runs', type='table')) }}
{% endmacro %}

{#- A run that ended without its on-run-end (killed, or its lease ended): its branch, if it
    opened one, is a red run's branch, expired after var wap_failed_branch_retention_hours by
    a later published run like theirs. `run`: the lock's row as that run held it. -#}
{% macro wap_record_abandoned(run, why) %}
    {%- do _wap_record(run, wap_branch_of(run.load_id), 'abandoned', [], why, invocation=run.holder) -%}
    {{ log("write-audit-publish: run " ~ run.load_id ~ " (invocation " ~ run.holder ~ ") abandoned: " ~ why
        ~ "; its branch " ~ wap_branch_of(run.load_id) ~ ", if any, expires like a red run's", info=true) }}
{% endmacro %}

{#- `tested`: this run ran every error test on every row it wrote (wap_run_tested_everything);
    only such a published run bounds what the next scheduled run's tests read. -#}
{% macro _wap_record(lock, branch, status, published, message, invocation=none) %}
    {%- set runs = wap_runs_relation() -%}
    {#- found with its `tested` column by this run's last_published_load (on-run-start): ready -#}
    {%- if not adapter.run_records_ready() -%}
        {%- do run_query('create schema if not exists ' ~ runs.schema) -%}
        {%- do run_query("create table if not exists " ~ runs ~ " (load_id bigint, invocation_id string,"
            ~ " branch string, status string, started_at timestamp, finished_at timestamp,"
            ~ " tables string, message string, tested boolean) using iceberg tblproperties ('format-version' = '2')") -%}
        {%- if not wap_runs_have_tested_column(runs) -%}  {#- a table from before the column: add it -#}
            {%- do run_query("alter table " ~ runs ~ " add columns (tested boolean)") -%}
        {%- endif -%}
        {%- do adapter.note_run_records_ready() -%}
    {%- endif -%}
    {%- set tables = [] -%}
    {%- for table in published -%}
        {%- do tables.append(table.relation ~ '@' ~ table.head) -%}
    {%- endfor -%}
    {%- set tested = status == 'published' and wap_run_tested_everything() -%}
    {%- do run_query("insert into " ~ runs ~ " values (" ~ lock.load_id ~ ", '" ~ (invocation or invocation_id) ~ "', '"
        ~ branch ~ "', '" ~ status ~ "', " ~ (("timestamp'" ~ lock.acquired_at ~ "'") if lock.acquired_at else 'null') ~ ", current_timestamp(), '"
        ~ tables | join(',') ~ "', '" ~ message | replace("\\", "\\\\") | replace("'", "\\'") ~ "', " ~ tested ~ ")") -%}
{% endmacro %}

{#- Whether ops.wap_runs has its `tested` column (tables made before it lack it). -#}
{% macro wap_runs_have_tested_column(runs) %}
    {{ return('tested' in adapter.get_columns_in_relation(runs) | map(attribute='name') | map('lower') | list) }}
{% endmacro %}

{#- Whether this invocation tested every row it wrote: a `dbt build` with no selection of
    its own (the default selector applies, or is named: a scheduler's `--selector <it>`). A
    scheduled `dbt run` or `dbt snapshot` publishes rows no test read, and a build of a
    selection may leave a load's rows to downstream models built later under the same load
    id: neither may raise the bound. -#}
{% macro wap_run_tested_everything() %}
    {%- set args = invocation_args_dict -%}
    {%- set selection = ['select', 'exclude', 'models', 'selector', 'resource_types', 'exclude_resource_types'] -%}
    {%- for name in selection if args.get(name) -%}
        {%- if not (name == 'selector' and adapter.is_default_selector(args.get(name))) -%}
            {{ return(false) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(flags.WHICH == 'build') }}
{% endmacro %}

{#- on-run-end, after the run lock is released: a publish that stopped fails the run. -#}
{% macro wap_fail_unpublished() %}
    {%- if not execute or not run_takes_lock() or not wap_requested() -%}{{ return('') }}{%- endif -%}
    {%- set runs = wap_runs_relation() -%}
    {#- read, not looked up: dbt's relation cache does not know a table this run created (a
        warehouse's first run), and trusting it let a stopped publish end green -#}
    {%- set read = _maintenance_execute("select status, message from " ~ runs ~ " where invocation_id = '" ~ invocation_id ~ "'") -%}
    {%- if read.error and ('TABLE_OR_VIEW_NOT_FOUND' in read.error or 'SCHEMA_NOT_FOUND' in read.error) -%}{{ return('') }}{%- endif -%}
    {%- if read.error -%}
        {{ exceptions.raise_database_error("write-audit-publish: this run's record could not be read: " ~ read.error) }}
    {%- endif -%}
    {%- set rows = read.table.rows -%}
    {%- if rows and (rows[0][0] == 'conflict' or rows[0][1].startswith('maintenance failed')) -%}
        {{ exceptions.raise_database_error("write-audit-publish: " ~ rows[0][1]) }}
    {%- endif -%}
    {{ return('') }}
{% endmacro %}

{#- dbt run-operation wap_drop_branch --args '{branch: wap_42}': drop a kept branch from every table. -#}
{% macro wap_drop_branch(branch) %}
    {%- if not modules.re.fullmatch('wap_[0-9]+', branch | string) -%}
        {{ exceptions.raise_compiler_error("wap_drop_branch: branch must look like wap_<load id>, got " ~ branch) }}
    {%- endif -%}
    {%- for node in graph.nodes.values() if wap_writes_table(node) -%}
        {%- set relation = adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias) -%}
        {%- if relation is not none and run_query("select 1 from " ~ relation ~ ".refs where name = '" ~ branch ~ "'").rows -%}
            {%- do run_query("alter table " ~ relation ~ " drop branch " ~ branch) -%}
            {{ print("dropped branch " ~ branch ~ " of " ~ relation) }}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}
