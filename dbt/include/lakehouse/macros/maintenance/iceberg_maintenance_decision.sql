{#- Decide, without changing anything, which maintenance steps a table needs now. The
    decisions are the adapter's (dbt/adapters/lakehouse/maintenance.py, unit-tested without a
    warehouse): this macro renders each configured step's SQL, makes the reads they are
    decided on and attaches the SQL to each step. Every run reads the commit's snapshot
    summary (iceberg_commit_summary); the files and manifests metadata tables
    (iceberg_table_health) only when the adapter says so (docs/maintenance-decisions.md).
    Returns {relation, steps: [{step, due, reason, sql, ...}], summary, health, read,
    error, seconds, ...}; iceberg_maintenance_act carries it out. `validate_only`: stop after
    the policy is checked and its SQL rendered, reading nothing. `state`: the cheap read when
    the caller made it for many tables at once (iceberg_table_states). `retention`: the
    table's retention rule ({column, keep_days}: dbt/adapters/lakehouse/retention.py), applied
    only nightly, as the first step: rows dated before the window are deleted. `load_ledger`:
    the table is a load ledger (config `load_ledger`): the step records what it deletes in the
    compact ledger first (expired_load_ledger). -#}
{% macro iceberg_maintenance_decision(relation, policy, tblproperties={}, nightly=false, validate_only=false, state=none, retention=none, load_ledger=false) %}
    {%- set started = modules.datetime.datetime.utcnow() -%}
    {#- 1. The policy checked and every step's SQL rendered (so validated) before any read: a
        misconfigured policy fails on every run, not only on the day a step is due. -#}
    {%- set rules = adapter.maintenance_policy(policy, relation | string) -%}
    {%- set retention_rule = adapter.retention_rule(retention, relation | string) if nightly else none -%}

    {%- set compact = rules.has('rewrite_data_files') -%}
    {%- set compact_args = dict(rules.steps.get('rewrite_data_files') or {}) -%}
    {%- set compact_options = compact_args.pop('options', {}) or {} -%}
    {%- set target_bytes = compact_options.get('target-file-size-bytes') or tblproperties.get('write.target-file-size-bytes') or 134217728 -%}
    {%- set compact_base = {'min-input-files': rules.min_small_files, 'partial-progress.max-failed-commits': 1000} -%}
    {#- Folding deletes: every data file with a delete file is rewritten. The rewritten files
        take a new sequence number, so every delete file older than them is dangling and
        remove-dangling-deletes drops it (with the starting number, deletes of that very
        snapshot would be kept, and the next run would fold again). A delete committed while
        the fold runs makes Iceberg refuse that file group's commit: reported, retried next run. -#}
    {%- set compact_fold = {'min-input-files': rules.min_small_files, 'partial-progress.max-failed-commits': 1000,
                            'delete-file-threshold': 1, 'remove-dangling-deletes': true,
                            'use-starting-sequence-number': false} -%}
    {%- do compact_base.update(compact_options) -%}
    {%- do compact_fold.update(compact_options) -%}
    {%- set sql = {
        'compact': rewrite_data_files(relation, options=compact_base, **compact_args) if compact else none,
        'fold': rewrite_data_files(relation, options=compact_fold, **compact_args) if compact else none} -%}
    {%- set drop_dangling_sql = rewrite_position_delete_files(relation, options={'rewrite-all': true}) -%}

    {%- if rules.has('rewrite_position_delete_files') -%}
        {%- set deletes_args = rules.steps['rewrite_position_delete_files'] -%}
        {%- set deletes_options = {'min-input-files': 2} -%}
        {%- do deletes_options.update(deletes_args.get('options') or {}) -%}
        {%- do sql.update({'rewrite_position_delete_files': rewrite_position_delete_files(relation, options=deletes_options)}) -%}
    {%- endif -%}
    {%- set manifest_bytes = tblproperties.get('commit.manifest.target-size-bytes') or 8388608 -%}
    {%- for step, render in [('rewrite_manifests', rewrite_manifests), ('compute_table_stats', compute_table_stats),
                             ('expire_snapshots', expire_snapshots), ('remove_orphan_files', remove_orphan_files)]
          if rules.has(step) -%}
        {%- do sql.update({step: render(relation, **rules.steps[step])}) -%}
    {%- endfor -%}
    {%- set expire_before = started - modules.datetime.timedelta(hours=rules.window_hours + rules.slack_hours) -%}

    {%- set decision = {'relation': relation, 'nightly': nightly, 'steps': [], 'summary': none, 'health': none,
                        'read': 'snapshot summary', 'error': none, 'seconds': 0, 'expire_before': expire_before,
                        'target_bytes': target_bytes, 'min_small_files': rules.min_small_files, 'manifest_bytes': manifest_bytes,
                        'where': compact_args.get('where'), 'drop_dangling_sql': drop_dangling_sql} -%}
    {%- if (not policy and retention_rule is none) or validate_only -%}{{ return(decision) }}{%- endif -%}

    {#- 2. The cheap read: the commit's summary and the last checkpoint. -#}
    {%- set summary = iceberg_commit_summary(relation, expire_before, state) -%}
    {%- do decision.update({'summary': summary}) -%}
    {%- if summary.error or summary.current_snapshot_id is none -%}
        {%- do decision.update({'error': ('reading the snapshot summary: ' ~ summary.error) if summary.error else none,
                                'read': 'no snapshot',
                                'seconds': (modules.datetime.datetime.utcnow() - started).total_seconds()}) -%}
        {{ return(decision) }}
    {%- endif -%}

    {#- 3. The full read, only when the adapter says a threshold may be passed (or nightly, or
        no checkpoint yet). -#}
    {%- set health = none -%}
    {%- if adapter.maintenance_needs_full_read(rules, summary, nightly) -%}
        {%- set health = iceberg_table_health(relation, target_bytes, rules.min_small_files, manifest_bytes) -%}
        {%- if health.error -%}
            {%- do decision.update({'error': 'reading table health: ' ~ health.error,
                                    'seconds': (modules.datetime.datetime.utcnow() - started).total_seconds()}) -%}
            {{ return(decision) }}
        {%- endif -%}
        {%- do decision.update({'health': health, 'read': 'snapshot summary + files and manifests'}) -%}
    {%- endif -%}

    {#- 4. One entry per configured step, in the order they run, with its SQL. -#}
    {%- for step in adapter.maintenance_steps(rules, summary, health, nightly) -%}
        {%- do step.update({'sql': sql['fold' if step.fold_deletes else 'compact'] if step.step == 'rewrite_data_files' else sql[step.step]}) -%}
        {%- do decision.steps.append(step) -%}
    {%- endfor -%}

    {#- 5. Retention first: what it deletes, the steps after it need not compact. The column's
        bounds come from the files' statistics (Spark pushes min and max down to Iceberg). -#}
    {%- if retention_rule is not none -%}
        {%- set column = '`' ~ retention_rule.column ~ '`' -%}
        {%- set bounds = _maintenance_execute('select cast(min(' ~ column ~ ') as string), cast(max(' ~ column ~ ') as string) from ' ~ relation) -%}
        {%- if bounds.error -%}
            {%- do decision.update({'error': 'reading the retention column ' ~ retention_rule.column ~ ': ' ~ bounds.error,
                                    'seconds': (modules.datetime.datetime.utcnow() - started).total_seconds()}) -%}
            {{ return(decision) }}
        {%- endif -%}
        {%- set step = adapter.retention_step(retention_rule, bounds.table.rows[0][0], bounds.table.rows[0][1]) -%}
        {%- if step.due -%}
            {%- set predicate = column ~ " < date'" ~ step.cutoff ~ "'" -%}
            {%- if load_ledger -%}
                {#- a load ledger's lines leave only once a published run took them, and their
                    files and positions stay known in the compact ledger (expired_load_ledger) -#}
                {%- set published = published_load_through() -%}
                {%- if published is not none -%}
                    {%- set predicate = predicate ~ ' and _load_id <= ' ~ published -%}
                {%- endif -%}
                {%- do step.update({'ledger_sql': expired_load_ledger_sql(relation, predicate)}) -%}
            {%- endif -%}
            {%- do step.update({'sql': 'delete from ' ~ relation ~ ' where ' ~ predicate}) -%}
        {%- endif -%}
        {%- do decision.steps.insert(0, step) -%}
    {%- endif -%}
    {%- do decision.update({'seconds': (modules.datetime.datetime.utcnow() - started).total_seconds()}) -%}
    {{ return(decision) }}
{% endmacro %}
