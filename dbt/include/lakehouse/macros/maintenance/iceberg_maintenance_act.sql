{#- Carry out a decision of iceberg_maintenance_decision: run the due steps, each through
    _maintenance_execute so that a failure is recorded instead of raised, then read the
    table again and leave a checkpoint for the next decision. Returns {actions, errors,
    conflicts, step_seconds, summary (after), health (after), seconds}. -#}
{% macro iceberg_maintenance_act(decision) %}
    {%- set started = modules.datetime.datetime.utcnow() -%}
    {%- set relation = decision.relation -%}
    {%- set outcome = {'actions': [], 'errors': [], 'conflicts': 0, 'step_seconds': {}, 'ran': [],
                       'summary': decision.summary, 'health': decision.health, 'seconds': 0} -%}
    {%- if decision.error -%}
        {%- do outcome.errors.append(decision.error) -%}
        {%- do outcome.actions.append('decision FAILED: ' ~ decision.error[:300]) -%}
        {{ return(outcome) }}
    {%- endif -%}
    {%- set computed_stats = [] -%}
    {%- for step in decision.steps -%}
        {%- if not step.due -%}
            {%- do outcome.actions.append(step.skip) -%}
        {%- else -%}
            {%- set step_started = modules.datetime.datetime.utcnow() -%}
            {%- do _maintenance_starting(relation, step.step) -%}
            {#- a load ledger's retention records what it deletes first; if that fails, no delete -#}
            {%- set unrecorded = [] -%}
            {%- for sql in step.get('ledger_sql') or [] if not unrecorded -%}
                {%- set recorded = _maintenance_execute(sql) -%}
                {%- if recorded.error -%}{%- do unrecorded.append(recorded.error) -%}{%- endif -%}
            {%- endfor -%}
            {#- expiry frees what only the expired snapshots held: the files' bytes before and after -#}
            {%- set stored_before = _stored_file_bytes(relation) if step.step == 'expire_snapshots' else none -%}
            {%- set run = {'error': 'recording the expiring lines in the compact load ledger: ' ~ unrecorded[0], 'table': none}
                          if unrecorded else _maintenance_execute(step.sql) -%}
            {%- do outcome.ran.append(step.step) -%}
            {%- if run.error -%}
                {%- do outcome.errors.append(step.step ~ ': ' ~ run.error) -%}
                {%- do outcome.actions.append(step.step ~ ' FAILED (' ~ step.reason ~ '): ' ~ run.error[:300]) -%}
            {%- else -%}
                {%- set result = run.table -%}
                {%- if step.step == 'delete_expired_rows' -%}
                    {%- do outcome.actions.append(_retention_done(relation, step)) -%}
                {%- elif step.step == 'rewrite_data_files' -%}
                    {%- set failed = _first(result, 'failed_data_files_count', 0) -%}
                    {%- set rewritten = _first(result, 'rewritten_data_files_count', 0) | int -%}
                    {#- With partial progress Iceberg only logs a file group that lost its commit
                        race, so a crowded small file that was not rewritten is a group that did
                        not land. (A `where` limits the plan on purpose: nothing to compare.) -#}
                    {%- set planned = decision.health.crowded_small_files if decision.health is not none else 0 -%}
                    {%- set missed = 0 if decision.where else planned - rewritten -%}
                    {%- if missed > 0 or failed -%}
                        {%- do outcome.update({'conflicts': outcome.conflicts + 1}) -%}
                    {%- endif -%}
                    {%- set text = 'rewrite_data_files ' ~ step.strategy ~ ' rewrote ' ~ rewritten ~ ' files into '
                        ~ _first(result, 'added_data_files_count') ~ ' (' ~ step.reason ~ ')'
                        ~ (' CONFLICT: ' ~ missed ~ ' of ' ~ planned ~ ' small files not compacted ('
                           ~ failed ~ ' failed to rewrite; a file group that lost its commit race to a concurrent writer'
                           ~ ' is in the Spark log), left for the next run' if missed > 0 or failed else '') -%}
                    {%- if step.fold_deletes -%}
                        {#- position deletes of rewritten files keep the starting sequence number,
                            so remove-dangling-deletes cannot tell they are dangling: drop them -#}
                        {%- set dropped = _maintenance_execute(decision.drop_dangling_sql) -%}
                        {%- if dropped.error -%}
                            {%- do outcome.errors.append('rewrite_position_delete_files (dangling deletes): ' ~ dropped.error) -%}
                            {%- set text = text ~ '; dropping dangling deletes FAILED: ' ~ dropped.error[:300] -%}
                        {%- else -%}
                            {%- set text = text ~ ', then rewrote ' ~ _first(dropped.table, 'rewritten_delete_files_count', 0)
                                ~ ' delete files into ' ~ _first(dropped.table, 'added_delete_files_count', 0) -%}
                        {%- endif -%}
                    {%- endif -%}
                    {%- do outcome.actions.append(text) -%}
                {%- elif step.step == 'rewrite_position_delete_files' -%}
                    {%- do outcome.actions.append('rewrite_position_delete_files rewrote ' ~ _first(result, 'rewritten_delete_files_count')
                        ~ ' delete files into ' ~ _first(result, 'added_delete_files_count') ~ ' (' ~ step.reason ~ ')') -%}
                {%- elif step.step == 'rewrite_manifests' -%}
                    {%- do outcome.actions.append('rewrite_manifests ' ~ _first(result, 'rewritten_manifests_count') ~ ' -> '
                        ~ _first(result, 'added_manifests_count') ~ ' (' ~ step.reason ~ ')') -%}
                {%- elif step.step == 'compute_table_stats' -%}
                    {%- do computed_stats.append(true) -%}
                    {%- do outcome.actions.append('compute_table_stats wrote ' ~ (_first(result, 'statistics_file', '') | string).split('/')[-1]
                        ~ ' (' ~ step.reason ~ ')') -%}
                {%- elif step.step == 'expire_snapshots' -%}
                    {%- set stored_after = _stored_file_bytes(relation) -%}
                    {%- set freed = (stored_before - stored_after) if stored_before is not none and stored_after is not none else none -%}
                    {%- do outcome.actions.append('expire_snapshots removed ' ~ _first(result, 'deleted_manifest_lists_count') ~ ' snapshots and '
                        ~ _first(result, 'deleted_data_files_count', 0) ~ ' data files'
                        ~ (', freeing ' ~ freed ~ ' bytes of data and delete files' if freed is not none else '')
                        ~ ' (' ~ step.reason ~ ')') -%}
                {%- elif step.step == 'remove_orphan_files' -%}
                    {%- do outcome.actions.append('remove_orphan_files ' ~ ('would remove ' if step.dry_run else 'removed ')
                        ~ (result.rows | length) ~ ' files') -%}
                {%- endif -%}
            {%- endif -%}
            {%- do outcome.step_seconds.update({step.step: (modules.datetime.datetime.utcnow() - step_started).total_seconds()}) -%}
        {%- endif -%}
    {%- endfor -%}

    {#- After acting: read again (the log line's "after" and the checkpoint). -#}
    {%- set health = decision.health -%}
    {%- if outcome.ran -%}
        {%- set summary = iceberg_commit_summary(relation, decision.expire_before) -%}
        {%- if not summary.error and summary.current_snapshot_id is not none -%}
            {%- do outcome.update({'summary': summary}) -%}
        {%- endif -%}
        {%- if health is not none -%}
            {%- set health = iceberg_table_health(relation, decision.target_bytes, decision.min_small_files, decision.manifest_bytes) -%}
            {%- if health.error -%}
                {%- set health = none -%}
            {%- else -%}
                {%- do outcome.update({'health': health}) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endif -%}
    {%- if health is not none or computed_stats -%}
        {%- set written = iceberg_maintenance_checkpoint(relation, health, outcome.summary.total_records if computed_stats else none) -%}
        {%- if written -%}
            {%- do outcome.errors.append('checkpoint: ' ~ written) -%}
            {%- do outcome.actions.append('checkpoint FAILED: ' ~ written[:300]) -%}
        {%- endif -%}
    {%- endif -%}
    {%- do outcome.update({'seconds': (modules.datetime.datetime.utcnow() - started).total_seconds()}) -%}
    {{ return(outcome) }}
{% endmacro %}

{#- What a retention delete did, read from the commit it made (its snapshot summary) and
    worded by the adapter (retention.delete_outcome). -#}
{% macro _retention_done(relation, step) %}
    {%- set keys = adapter.retention_summary_keys() -%}
    {%- set columns = [] -%}
    {%- for key in keys -%}{%- do columns.append("cast(summary['" ~ key ~ "'] as bigint)") -%}{%- endfor -%}
    {%- set made = _maintenance_execute('select ' ~ columns | join(', ') ~ ' from ' ~ relation ~ '.snapshots order by committed_at desc limit 1') -%}
    {%- if made.error -%}{{ return('delete_expired_rows ran; reading its commit FAILED: ' ~ made.error[:300]) }}{%- endif -%}
    {%- set summary = {} -%}
    {%- for key in keys -%}{%- do summary.update({key: made.table.rows[0][loop.index0]}) -%}{%- endfor -%}
    {{ return(adapter.retention_delete_outcome(summary, step)) }}
{% endmacro %}

{#- The bytes of every data and delete file a snapshot of the table still holds (each file once),
    or none when they cannot be read. -#}
{% macro _stored_file_bytes(relation) %}
    {%- set read = _maintenance_execute('select coalesce(sum(file_size_in_bytes), 0) from (select distinct file_path, file_size_in_bytes from '
                                        ~ relation ~ '.all_files)') -%}
    {{ return(none if read.error else read.table.rows[0][0] | int) }}
{% endmacro %}
