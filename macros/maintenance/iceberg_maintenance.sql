{#- The one entry point for table maintenance: a post-hook of every Iceberg model (see
    dbt_project.yml) and the nightly `iceberg_maintain_all` operation both call
    `iceberg_maintain`. A model's `maintenance` config (folder defaults, model overrides)
    says what it wants; the table's measured health decides what runs now. -#}
{% macro iceberg_maintenance(relation=this) %}
    {%- if not execute or config.get('materialized') == 'view' -%}{{ return('') }}{%- endif -%}
    {%- do iceberg_maintain(relation, config.get('maintenance') or {}, config.get('tblproperties') or {},
                            config.get('partition_by') is not none, nightly=false) -%}
    {{ return('') }}
{% endmacro %}

{#- Measure, decide, act, log one line. Healthy tables cost one metadata query and create
    no snapshot. `nightly` adds the steps too slow for every run (orphan-file removal). -#}
{% macro iceberg_maintain(relation, policy, tblproperties={}, partitioned=false, nightly=false) %}
    {%- set steps = ['rewrite_data_files', 'rewrite_position_delete_files', 'rewrite_manifests',
                     'expire_snapshots', 'remove_orphan_files'] -%}
    {%- for step in policy if step not in steps -%}
        {{ exceptions.raise_compiler_error("maintenance of " ~ relation ~ ": unknown step '" ~ step ~ "'; known: " ~ (steps | join(', '))) }}
    {%- endfor -%}
    {#- Each step's SQL is rendered (so validated) before the decision: a misconfigured
        policy fails on every run, not only on the day the table needs the step. -#}
    {%- set started = modules.datetime.datetime.utcnow() -%}
    {%- set target_bytes = ((policy.get('rewrite_data_files') or {}).get('options') or {}).get('target-file-size-bytes')
                           or tblproperties.get('write.target-file-size-bytes') or 134217728 -%}
    {%- set min_small = ((policy.get('rewrite_data_files') or {}).get('min_small_files', 5)) | int -%}
    {%- set before = iceberg_table_health(relation, target_bytes, partitioned, min_small) -%}
    {%- set actions = [] -%}

    {%- set compact = policy.get('rewrite_data_files') -%}
    {%- if compact -%}
        {%- set args = _maintenance_args(compact, ['min_small_files', 'min_delete_files'], relation, 'rewrite_data_files') -%}
        {%- set min_deletes = (compact.get('min_delete_files', 10)) | int -%}
        {%- set delete_files = before.position_delete_files + before.equality_delete_files -%}
        {%- set options = {'min-input-files': min_small, 'delete-file-threshold': min_deletes,
                           'partial-progress.max-failed-commits': 1000} -%}
        {%- do options.update(args.pop('options', {}) or {}) -%}
        {%- set sql = rewrite_data_files(relation, options=options, **args) -%}
        {%- if before.crowded_partitions > 0 or delete_files >= min_deletes -%}
            {%- do _maintenance_starting(relation, 'rewrite_data_files') -%}
            {%- set result = run_query(sql) -%}
            {%- set failed = _first(result, 'failed_data_files_count', 0) -%}
            {#- With partial progress Iceberg only logs a file group that lost its commit race
                (the result counts rewrite failures and committed groups only), so a planned
                small file that was not rewritten is a group that did not land. -#}
            {%- set rewritten = _first(result, 'rewritten_data_files_count', 0) | int -%}
            {#- (a `where` limits the plan on purpose: nothing to compare against) -#}
            {%- set missed = 0 if args.get('where') else before.crowded_small_files - rewritten -%}
            {%- do actions.append('rewrite_data_files ' ~ (args.get('strategy') or 'binpack') ~ ' rewrote '
                ~ rewritten ~ ' files into ' ~ _first(result, 'added_data_files_count')
                ~ (' CONFLICT: ' ~ missed ~ ' of ' ~ before.crowded_small_files ~ ' small files not compacted ('
                   ~ failed ~ ' failed to rewrite; a file group that lost its commit race to a concurrent writer'
                   ~ ' is in the Spark log), left for the next run'
                   if missed > 0 or failed else '')) -%}
        {%- else -%}
            {%- do actions.append('rewrite_data_files skipped (' ~ before.max_small_files_in_partition ~ ' < ' ~ min_small
                ~ ' small files per partition, ' ~ delete_files ~ ' < ' ~ min_deletes ~ ' delete files)') -%}
        {%- endif -%}
    {%- endif -%}

    {%- set deletes = policy.get('rewrite_position_delete_files') -%}
    {%- if deletes -%}
        {%- set args = _maintenance_args(deletes, ['min_delete_files'], relation, 'rewrite_position_delete_files') -%}
        {%- set min_deletes = (deletes.get('min_delete_files', 10)) | int -%}
        {%- set options = {'min-input-files': min_deletes} -%}
        {%- do options.update(args.pop('options', {}) or {}) -%}
        {%- set sql = rewrite_position_delete_files(relation, options=options) -%}
        {%- if before.position_delete_files >= min_deletes -%}
            {%- do _maintenance_starting(relation, 'rewrite_position_delete_files') -%}
            {%- set result = run_query(sql) -%}
            {%- do actions.append('rewrite_position_delete_files rewrote ' ~ _first(result, 'rewritten_delete_files_count')
                ~ ' delete files into ' ~ _first(result, 'added_delete_files_count')) -%}
        {%- else -%}
            {%- do actions.append('rewrite_position_delete_files skipped (' ~ before.position_delete_files ~ ' < ' ~ min_deletes ~ ')') -%}
        {%- endif -%}
    {%- endif -%}

    {%- set manifests = policy.get('rewrite_manifests') -%}
    {%- if manifests -%}
        {%- set args = _maintenance_args(manifests, ['min_manifests'], relation, 'rewrite_manifests') -%}
        {%- set min_manifests = (manifests.get('min_manifests', 50)) | int -%}
        {%- set sql = rewrite_manifests(relation, **args) -%}
        {%- if before.manifests >= min_manifests -%}
            {%- do _maintenance_starting(relation, 'rewrite_manifests') -%}
            {%- set result = run_query(sql) -%}
            {%- do actions.append('rewrite_manifests ' ~ _first(result, 'rewritten_manifests_count') ~ ' -> ' ~ _first(result, 'added_manifests_count')) -%}
        {%- else -%}
            {%- do actions.append('rewrite_manifests skipped (' ~ before.manifests ~ ' < ' ~ min_manifests ~ ')') -%}
        {%- endif -%}
    {%- endif -%}

    {%- set expire = policy.get('expire_snapshots') -%}
    {%- if expire -%}
        {%- set args = _maintenance_args(expire, [], relation, 'expire_snapshots') -%}
        {%- set window = (expire.get('older_than_hours', 72)) | float -%}
        {%- set keep = (expire.get('retain_last', 10)) | int -%}
        {%- set sql = expire_snapshots(relation, **args) -%}
        {%- if before.snapshots > keep and before.oldest_snapshot_age_hours > window -%}
            {%- do _maintenance_starting(relation, 'expire_snapshots') -%}
            {%- set result = run_query(sql) -%}
            {%- do actions.append('expire_snapshots removed ' ~ _first(result, 'deleted_manifest_lists_count') ~ ' snapshots') -%}
        {%- else -%}
            {%- do actions.append('expire_snapshots skipped (' ~ before.snapshots ~ ' snapshots, oldest '
                ~ '%.1f' | format(before.oldest_snapshot_age_hours) ~ ' h; keep ' ~ keep ~ ' and ' ~ window ~ ' h)') -%}
        {%- endif -%}
    {%- endif -%}

    {%- set orphans = policy.get('remove_orphan_files') -%}
    {%- if orphans -%}
        {%- set args = _maintenance_args(orphans, [], relation, 'remove_orphan_files') -%}
        {%- set sql = remove_orphan_files(relation, **args) -%}  {#- validated on every run -#}
    {%- endif -%}
    {%- if orphans and nightly -%}
        {%- do _maintenance_starting(relation, 'remove_orphan_files') -%}
        {%- set result = run_query(sql) -%}
        {%- do actions.append('remove_orphan_files ' ~ ('would remove ' if args.get('dry_run') else 'removed ') ~ (result.rows | length) ~ ' files') -%}
    {%- endif -%}

    {%- set acted = [] -%}
    {%- for action in actions if 'skipped' not in action -%}{%- do acted.append(action) -%}{%- endfor -%}
    {%- set after = iceberg_table_health(relation, target_bytes, partitioned, min_small) if acted else before -%}
    {%- set seconds = (modules.datetime.datetime.utcnow() - started).total_seconds() -%}
    {{ log("maintenance " ~ relation ~ ": data files " ~ before.data_files ~ " -> " ~ after.data_files
        ~ ", bytes " ~ before.data_bytes ~ " -> " ~ after.data_bytes
        ~ ", delete files " ~ (before.position_delete_files + before.equality_delete_files) ~ " -> " ~ (after.position_delete_files + after.equality_delete_files)
        ~ ", manifests " ~ before.manifests ~ " -> " ~ after.manifests
        ~ ", snapshots " ~ before.snapshots ~ " -> " ~ after.snapshots
        ~ " | " ~ (actions | join('; ') if actions else 'no maintenance policy')
        ~ " | " ~ '%.1f' | format(seconds) ~ " s", info=true) }}
    {{ return({'before': before, 'after': after, 'actions': actions}) }}
{% endmacro %}

{#- Said before a procedure runs, so that if it fails the model's log shows that its own
    write had already committed and only maintenance failed (a post-hook cannot catch). -#}
{% macro _maintenance_starting(relation, step) %}
    {{ log("running " ~ step ~ " on " ~ relation ~ " (maintenance: the model's own write is already committed)", info=false) }}
{% endmacro %}

{#- A step's config minus the thresholds that only steer the decision. -#}
{% macro _maintenance_args(step_config, thresholds, relation, step) %}
    {%- if step_config is not mapping -%}
        {{ exceptions.raise_compiler_error("maintenance of " ~ relation ~ ": " ~ step ~ " must be a mapping of arguments, got " ~ step_config) }}
    {%- endif -%}
    {%- set args = {} -%}
    {%- for name, value in step_config.items() if name not in thresholds -%}
        {%- do args.update({name: value}) -%}
    {%- endfor -%}
    {{ return(args) }}
{% endmacro %}

{% macro _first(result, column, default='?') %}
    {%- if column in result.column_names -%}
        {{ return(result.columns[column].values()[0]) }}
    {%- endif -%}
    {{ return(default) }}
{% endmacro %}
