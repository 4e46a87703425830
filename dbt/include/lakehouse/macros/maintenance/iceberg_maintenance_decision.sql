{#- Decide, without changing anything, which maintenance steps a table needs now.
    Every run reads the commit's snapshot summary (iceberg_commit_summary); the files and
    manifests metadata tables (iceberg_table_health) are read only when a counter says a
    threshold may be passed, when the table has no checkpoint yet, and on `nightly` runs.
    Each step's trigger matches what its procedure then does, so a table that was just
    maintained is healthy on the next run (docs/maintenance-decisions.md).
    Returns {relation, steps: [{step, due, reason, sql, ...}], summary, health, read,
    error, seconds, ...}; iceberg_maintenance_act carries it out. `validate_only`: stop after
    the policy is checked and its SQL rendered, reading nothing. -#}
{% macro iceberg_maintenance_decision(relation, policy, tblproperties={}, nightly=false, validate_only=false) %}
    {%- set known = ['rewrite_data_files', 'rewrite_position_delete_files', 'rewrite_manifests',
                     'compute_table_stats', 'expire_snapshots', 'remove_orphan_files'] -%}
    {%- for step in policy if step not in known -%}
        {{ exceptions.raise_compiler_error("maintenance of " ~ relation ~ ": unknown step '" ~ step ~ "'; known: " ~ (known | join(', '))) }}
    {%- endfor -%}
    {%- set started = modules.datetime.datetime.utcnow() -%}
    {%- set none_policy = {} -%}

    {#- 1. Thresholds read and every step's SQL rendered (so validated) before any read:
        a misconfigured policy fails on every run, not only on the day a step is due. -#}
    {%- set compact = policy.get('rewrite_data_files') -%}
    {%- set compact_args = _maintenance_args(compact, ['min_small_files', 'min_delete_files', 'min_delete_ratio'], relation, 'rewrite_data_files') if compact else {} -%}
    {%- set compact_options = compact_args.pop('options', {}) or {} -%}
    {%- set min_small = _maintenance_threshold(compact or {}, 'min_small_files', 5, relation, 'rewrite_data_files') | int -%}
    {#- at least 2: in an unpartitioned table Iceberg keeps the newest equality-delete file
        of a fold until a later commit (docs/maintenance-decisions.md); 1 would fold again -#}
    {%- set min_delete_files = [_maintenance_threshold(compact or {}, 'min_delete_files', 10, relation, 'rewrite_data_files') | int, 2] | max -%}
    {%- set min_delete_ratio = _maintenance_threshold(compact or {}, 'min_delete_ratio', 0.05, relation, 'rewrite_data_files') -%}
    {%- set target_bytes = compact_options.get('target-file-size-bytes') or tblproperties.get('write.target-file-size-bytes') or 134217728 -%}
    {%- set compact_base = {'min-input-files': min_small, 'partial-progress.max-failed-commits': 1000} -%}
    {#- Folding deletes: every data file with a delete file is rewritten. The rewritten files
        take a new sequence number, so every delete file older than them is dangling and
        remove-dangling-deletes drops it (with the starting number, deletes of that very
        snapshot would be kept, and the next run would fold again). A delete committed while
        the fold runs makes Iceberg refuse that file group's commit: reported, retried next run. -#}
    {%- set compact_fold = {'min-input-files': min_small, 'partial-progress.max-failed-commits': 1000,
                            'delete-file-threshold': 1, 'remove-dangling-deletes': true,
                            'use-starting-sequence-number': false} -%}
    {%- do compact_base.update(compact_options) -%}
    {%- do compact_fold.update(compact_options) -%}
    {%- set compact_sql = rewrite_data_files(relation, options=compact_base, **compact_args) if compact else none -%}
    {%- set fold_sql = rewrite_data_files(relation, options=compact_fold, **compact_args) if compact else none -%}
    {%- set drop_dangling_sql = rewrite_position_delete_files(relation, options={'rewrite-all': true}) -%}

    {%- set deletes = policy.get('rewrite_position_delete_files') -%}
    {%- set deletes_args = _maintenance_args(deletes, ['min_delete_files'], relation, 'rewrite_position_delete_files') if deletes else {} -%}
    {%- set min_surplus = [_maintenance_threshold(deletes or {}, 'min_delete_files', 2, relation, 'rewrite_position_delete_files') | int, 1] | max -%}
    {%- set deletes_options = {'min-input-files': 2} -%}
    {%- do deletes_options.update(deletes_args.get('options') or {}) -%}
    {%- set deletes_sql = rewrite_position_delete_files(relation, options=deletes_options) if deletes else none -%}

    {%- set manifests = policy.get('rewrite_manifests') -%}
    {%- set manifests_args = _maintenance_args(manifests, ['min_manifests'], relation, 'rewrite_manifests') if manifests else {} -%}
    {%- set min_manifests = _maintenance_threshold(manifests or {}, 'min_manifests', 50, relation, 'rewrite_manifests') | int -%}
    {%- set manifest_bytes = tblproperties.get('commit.manifest.target-size-bytes') or 8388608 -%}
    {%- set manifests_sql = rewrite_manifests(relation, **manifests_args) if manifests else none -%}

    {%- set stats = policy.get('compute_table_stats') -%}
    {%- set stats_args = _maintenance_args(stats, ['min_changed_ratio'], relation, 'compute_table_stats') if stats else {} -%}
    {%- set min_changed_ratio = _maintenance_threshold(stats or {}, 'min_changed_ratio', 0.1, relation, 'compute_table_stats') -%}
    {%- set stats_sql = compute_table_stats(relation, **stats_args) if stats else none -%}

    {%- set expire = policy.get('expire_snapshots') -%}
    {%- set expire_args = _maintenance_args(expire, ['slack_hours'], relation, 'expire_snapshots') if expire else {} -%}
    {%- set expire_sql = expire_snapshots(relation, **expire_args) if expire else none -%}
    {%- set window = (expire or {}).get('older_than_hours', 72) | float(72) -%}
    {%- set keep = (expire or {}).get('retain_last', 10) | int(10) -%}
    {%- set slack = _maintenance_threshold(expire or {}, 'slack_hours', 24, relation, 'expire_snapshots') -%}
    {%- set expire_before = started - modules.datetime.timedelta(hours=window + slack) -%}

    {%- set orphans = policy.get('remove_orphan_files') -%}
    {%- set orphans_args = _maintenance_args(orphans, [], relation, 'remove_orphan_files') if orphans else {} -%}
    {%- set orphans_sql = remove_orphan_files(relation, **orphans_args) if orphans else none -%}

    {%- set decision = {'relation': relation, 'nightly': nightly, 'steps': [], 'summary': none, 'health': none,
                        'read': 'snapshot summary', 'error': none, 'seconds': 0, 'expire_before': expire_before,
                        'target_bytes': target_bytes, 'min_small_files': min_small, 'manifest_bytes': manifest_bytes,
                        'where': compact_args.get('where'), 'drop_dangling_sql': drop_dangling_sql} -%}
    {%- if not policy or validate_only -%}{{ return(decision) }}{%- endif -%}

    {#- 2. The cheap read: the commit's summary and the last checkpoint. -#}
    {%- set summary = iceberg_commit_summary(relation, expire_before) -%}
    {%- do decision.update({'summary': summary}) -%}
    {%- if summary.error or summary.current_snapshot_id is none -%}
        {%- do decision.update({'error': ('reading the snapshot summary: ' ~ summary.error) if summary.error else none,
                                'read': 'no snapshot',
                                'seconds': (modules.datetime.datetime.utcnow() - started).total_seconds()}) -%}
        {{ return(decision) }}
    {%- endif -%}
    {%- set properties = summary.properties -%}
    {%- set checked = summary.checked_at_ms >= 0 -%}
    {%- set small_bound = (properties.get('lakehouse.maintenance.max-small-files-in-partition', min_small) | int(min_small))
                          + summary.partition_files_added_bound -%}
    {%- set manifest_bound = (properties.get('lakehouse.maintenance.small-manifests', min_manifests) | int(min_manifests))
                             + 2 * summary.snapshots_since_check -%}
    {%- set may_need = (compact and small_bound >= min_small)
                       or (deletes and summary.total_delete_files >= min_surplus + 1)
                       or (manifests and manifest_bound >= min_manifests) -%}

    {#- 3. The full read, only when a counter passed its gate (or nightly, or no checkpoint). -#}
    {%- set health = none -%}
    {%- if (compact or deletes or manifests) and (nightly or not checked or may_need) -%}
        {%- set health = iceberg_table_health(relation, target_bytes, min_small, manifest_bytes) -%}
        {%- if health.error -%}
            {%- do decision.update({'error': 'reading table health: ' ~ health.error,
                                    'seconds': (modules.datetime.datetime.utcnow() - started).total_seconds()}) -%}
            {{ return(decision) }}
        {%- endif -%}
        {%- do decision.update({'health': health, 'read': 'snapshot summary + files and manifests'}) -%}
    {%- endif -%}

    {#- 4. One entry per configured step, in the order they run. -#}
    {%- set steps = decision.steps -%}
    {%- if compact -%}
        {%- set deleted_rows = summary.total_position_deletes + summary.total_equality_deletes -%}
        {%- set ratio = (deleted_rows / summary.total_records) if summary.total_records > 0 else 0 -%}
        {%- set fold = summary.total_delete_files > 0 and (summary.total_delete_files >= min_delete_files or ratio >= min_delete_ratio) -%}
        {%- set crowded = health is not none and health.max_small_files_in_partition >= min_small -%}
        {%- set small_text = (health.max_small_files_in_partition if health is not none else 'at most ' ~ small_bound) -%}
        {%- do steps.append({'step': 'rewrite_data_files', 'due': fold or crowded, 'fold_deletes': fold,
            'sql': fold_sql if fold else compact_sql, 'strategy': compact_args.get('strategy') or 'binpack',
            'reason': ('small files ' ~ small_text ~ ' >= ' ~ min_small ~ ' in a partition' if crowded else '')
                      ~ (', ' if crowded and fold else '')
                      ~ (summary.total_delete_files ~ ' delete files, ' ~ '%.4f' | format(ratio) ~ ' of rows deleted: folding deletes' if fold else ''),
            'skip': 'rewrite_data_files skipped (' ~ small_text ~ ' < ' ~ min_small ~ ' small files per partition, '
                    ~ summary.total_delete_files ~ ' < ' ~ min_delete_files ~ ' delete files, '
                    ~ '%.4f' | format(ratio) ~ ' < ' ~ min_delete_ratio ~ ' of rows deleted)'}) -%}
    {%- endif -%}
    {%- if deletes -%}
        {%- set surplus = health.surplus_position_delete_files if health is not none else 0 -%}
        {%- do steps.append({'step': 'rewrite_position_delete_files', 'due': surplus >= min_surplus, 'sql': deletes_sql,
            'reason': surplus ~ ' surplus position-delete files',
            'skip': 'rewrite_position_delete_files skipped (' ~ (surplus if health is not none else 'no')
                    ~ ' surplus < ' ~ min_surplus ~ '; ' ~ summary.total_delete_files ~ ' delete files)'}) -%}
    {%- endif -%}
    {%- if manifests -%}
        {%- set small_manifests = health.small_manifests if health is not none else 'at most ' ~ manifest_bound -%}
        {%- do steps.append({'step': 'rewrite_manifests', 'due': health is not none and health.small_manifests >= min_manifests,
            'sql': manifests_sql, 'reason': small_manifests ~ ' small manifests',
            'skip': 'rewrite_manifests skipped (' ~ small_manifests ~ ' < ' ~ min_manifests ~ ' small manifests)'}) -%}
    {%- endif -%}
    {%- if stats -%}
        {%- set stats_records = properties.get('lakehouse.maintenance.stats-records') -%}
        {%- set changed = ((summary.total_records - (stats_records | int)) | abs) / ([stats_records | int, 1] | max) if stats_records is not none else none -%}
        {%- do steps.append({'step': 'compute_table_stats', 'due': changed is none or changed >= min_changed_ratio, 'sql': stats_sql,
            'reason': 'no statistics yet' if changed is none else '%.3f' | format(changed) ~ ' of rows changed since the last statistics',
            'skip': 'compute_table_stats skipped (' ~ ('%.3f' | format(changed if changed is not none else 0)) ~ ' < '
                    ~ min_changed_ratio ~ ' of rows changed)'}) -%}
    {%- endif -%}
    {%- if expire -%}
        {%- set old = summary.snapshots_before_cutoff -%}
        {%- set expirable = [old - [keep - (summary.snapshots - old), 0] | max, 0] | max -%}
        {%- do steps.append({'step': 'expire_snapshots', 'due': expirable > 0, 'sql': expire_sql,
            'reason': expirable ~ ' snapshots older than ' ~ window ~ ' h + ' ~ slack ~ ' h slack',
            'skip': 'expire_snapshots skipped (' ~ summary.snapshots ~ ' snapshots, oldest '
                    ~ '%.1f' | format(summary.oldest_snapshot_age_hours) ~ ' h; keep ' ~ keep ~ ' and ' ~ window
                    ~ ' h, act after ' ~ (window + slack) ~ ' h)'}) -%}
    {%- endif -%}
    {%- if orphans and nightly -%}
        {%- do steps.append({'step': 'remove_orphan_files', 'due': true, 'sql': orphans_sql, 'reason': 'nightly',
                             'dry_run': orphans_args.get('dry_run'), 'skip': ''}) -%}
    {%- endif -%}
    {%- do decision.update({'seconds': (modules.datetime.datetime.utcnow() - started).total_seconds()}) -%}
    {{ return(decision) }}
{% endmacro %}
