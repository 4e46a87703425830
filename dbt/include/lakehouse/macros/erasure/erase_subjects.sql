{#- Erasure on request: every row of the given users leaves every table that declares where it
    holds them (config `erasure`, dbt/adapters/lakehouse/erasure.py), in three steps:

        dbt run-operation erase_subjects --args '{request: DSR-42, user_ids: [17, 23]}'
        dbt build --select <the aggregates it names> --event-time-start <day> --event-time-end <day>
        dbt run-operation erase_subjects --args '{request: DSR-42, finish: true}'

    The first prints the other two. It deletes the subjects' rows (redacts them in a load ledger, nulls their mentions) and names the backfill
    that recomputes the aggregates of their days; the last drops every tag and branch of the
    tables it changed, expires every older snapshot and removes unreferenced files, so that no
    snapshot or file still holds the rows. Each step holds the run lock, records what it did in
    `ops.erasures` (rows per table, never an erased value) and is idempotent: a step killed
    midway is run again with the same arguments. docs/retention.md#erasure. -#}
{% macro erase_subjects(request=none, user_ids=none, finish=false, requested_by=none) %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- set tables = _erasure_tables() -%}
    {%- if finish -%}
        {%- do adapter.erasure_request(request, ['-']) -%}  {#- checks the request's name -#}
        {%- do _erasure_finish(request, tables) -%}
    {%- else -%}
        {%- set checked = adapter.erasure_request(request, user_ids) -%}
        {%- set requested_by = requested_by or env_var('USER', 'unknown') -%}
        {%- if not modules.re.fullmatch('[A-Za-z0-9_.:@ -]{1,128}', requested_by | string) -%}
            {{ exceptions.raise_compiler_error("erase_subjects: requested_by names a person or team (letters, digits, _ . : @ - and spaces), got " ~ requested_by) }}
        {%- endif -%}
        {%- do _erasure_erase(checked[0], checked[1], tables, requested_by) -%}
    {%- endif -%}
{% endmacro %}

{#- Every Iceberg table with an erasure rule: [{node, rule, relation (none: not built)}], each
    rule checked before anything is read -#}
{% macro _erasure_tables() %}
    {%- set found = [] -%}
    {%- for node in graph.nodes.values()
          if node.resource_type in ['model', 'snapshot'] and node.config.get('erasure')
          and node.config.materialized in ['table', 'incremental', 'snapshot'] -%}
        {%- set rule = adapter.erasure_rule(node.config.get('erasure'), node.schema ~ '.' ~ node.alias) -%}
        {%- do found.append({'node': node, 'rule': rule,
            'relation': adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)}) -%}
    {%- endfor -%}
    {{ return(found | sort(attribute='node.unique_id') | list) }}
{% endmacro %}

{% macro erasure_record_relation() %}
    {{ return(api.Relation.create(schema=platform_schema(), identifier='erasures', type='table')) }}
{% endmacro %}

{% macro erased_positions_relation() %}
    {{ return(api.Relation.create(schema=platform_schema(), identifier='erased_positions', type='table')) }}
{% endmacro %}

{#- The source positions erased from a load ledger when some have been, else none (no
    statement when the platform schema is in dbt's relation cache): an ODS model stores a
    re-sent copy of such a record redacted (ods_landed_lines). -#}
{% macro erased_positions() %}
    {{ return(load_relation(erased_positions_relation())) }}
{% endmacro %}

{% macro _erasure_ddl() %}
    {%- do run_query('create schema if not exists ' ~ platform_schema()) -%}
    {%- do run_query("create table if not exists " ~ erasure_record_relation() ~ " (
            request string comment 'the request this erasure answers (its name, given by whoever asked)',
            table_name string,
            action string comment 'redact, delete, detach, recompute, expire or finished',
            row_count bigint comment 'rows changed; for recompute the days; for expire the files removed',
            detail string comment 'what else the action did (a range of days, files removed); never an erased value',
            subject_count int comment 'how many subjects the request named',
            requested_by string,
            recorded_at timestamp
        ) using iceberg tblproperties ('format-version' = '2', 'commit.retry.num-retries' = '20')") -%}
    {%- do run_query("create table if not exists " ~ erased_positions_relation() ~ " (
            ods_table string comment 'the load ledger (schema.table) an erased line was redacted in',
            source_partition int,
            source_offset bigint,
            request string,
            erased_at timestamp
        ) using iceberg tblproperties ('format-version' = '2', 'commit.retry.num-retries' = '20',
                                       'write.distribution-mode' = 'none')") -%}
{% endmacro %}

{#- One row of the record per (request, table, action); a rerun adds what it changed again
    (nothing, for a step that had finished). Every text is checked or the macros' own. -#}
{% macro _erasure_record(request, table, action, rows, detail, subjects, requested_by) %}
    {%- do run_query("merge into " ~ erasure_record_relation() ~ " as record using (select '"
        ~ request ~ "' as request, '" ~ table ~ "' as table_name, '" ~ action ~ "' as action, cast("
        ~ rows ~ " as bigint) as row_count, '" ~ detail ~ "' as detail, cast(" ~ subjects
        ~ " as int) as subject_count, '" ~ requested_by ~ "' as requested_by, current_timestamp() as recorded_at) as step"
        ~ " on record.request = step.request and record.table_name = step.table_name and record.action = step.action"
        ~ " when matched then update set record.row_count = record.row_count + step.row_count"
        ~ " when not matched then insert *") -%}
{% endmacro %}

{% macro _erasure_erase(request, subjects, tables, requested_by) %}
    {%- do acquire_run_lock(operation=true) -%}
    {%- do _erasure_ddl() -%}
    {%- set record = erasure_record_relation() -%}
    {%- set planned = {} -%}
    {%- for table in tables if table.relation is not none -%}
        {%- set types = {} -%}
        {%- for column in adapter.get_columns_in_relation(table.relation) -%}
            {%- do types.update({column.name | lower: column.dtype}) -%}
        {%- endfor -%}
        {%- do planned.update({table.node.unique_id: adapter.erasure_plan(table.rule, table.relation | string, subjects, types,
                table.node.config.get('load_ledger') or false, request)}) -%}
    {%- endfor -%}
    {#- 1. the days each aggregate recomputes, read before their rows go (a rerun keeps the
        first reading: the rows are gone by then) -#}
    {%- set backfills = [] -%}
    {%- for table in tables if table.rule.recompute and table.relation is not none -%}
        {%- set recorded = run_query("select detail from " ~ record ~ " where request = '" ~ request
            ~ "' and table_name = '" ~ table.relation ~ "' and action = 'recompute'").rows -%}
        {%- if recorded -%}
            {%- set span = recorded[0][0] -%}
        {%- else -%}
            {%- set reads = [] -%}
            {%- for source in tables if source.node.unique_id in table.node.depends_on.nodes
                  and source.relation is not none and source.node.config.get('backfill_by') -%}
                {%- for step in planned[source.node.unique_id] if step.action == 'delete' -%}
                    {%- do reads.append("select distinct to_date(" ~ source.node.config.get('backfill_by') ~ ") as day from "
                        ~ source.relation ~ " where " ~ step.predicate) -%}
                {%- endfor -%}
            {%- endfor -%}
            {%- set days = run_query(reads | join(' union ')).columns[0].values() if reads else [] -%}
            {%- set range = adapter.erasure_recompute_range(days) -%}
            {%- set span = (range.start ~ '..' ~ range.end) if range else '' -%}
            {%- do _erasure_record(request, table.relation, 'recompute', range.days if range else 0, span, subjects | length, requested_by) -%}
        {%- endif -%}
        {%- if span -%}
            {%- do backfills.append({'model': table.node.name, 'span': span.split('..')}) -%}
        {%- endif -%}
    {%- endfor -%}
    {#- 2. each table's rows -#}
    {%- for table in tables if table.relation is not none -%}
        {%- for step in planned[table.node.unique_id] -%}
            {%- set rows = run_query("select count(*) from " ~ table.relation ~ " where " ~ step.predicate).rows[0][0] | int -%}
            {%- if rows > 0 -%}
                {%- if step.action == 'redact' -%}
                    {%- do _erasure_keep_positions(table.relation, step.predicate, request) -%}
                {%- endif -%}
                {%- if step.action == 'delete' -%}
                    {%- do run_query("delete from " ~ table.relation ~ " where " ~ step.predicate) -%}
                {%- else -%}
                    {%- do run_query("update " ~ table.relation ~ " set " ~ step.sql_set ~ " where " ~ step.predicate) -%}
                {%- endif -%}
                {%- do _erasure_rewrite_deleted_rows(table) -%}
            {%- endif -%}
            {%- do _erasure_record(request, table.relation, step.action, rows, '', subjects | length, requested_by) -%}
            {{ log("erasure " ~ request ~ ": " ~ table.relation ~ " " ~ step.action ~ " " ~ rows ~ " rows", info=true) }}
        {%- endfor -%}
    {%- endfor -%}
    {%- do release_run_lock(holder=invocation_id) -%}
    {%- for backfill in backfills -%}
        {{ log("erasure " ~ request ~ ": recompute: dbt build --select " ~ backfill.model ~ " --event-time-start "
            ~ backfill.span[0] ~ " --event-time-end " ~ backfill.span[1], info=true) }}
    {%- endfor -%}
    {{ log("erasure " ~ request ~ ": then: dbt run-operation erase_subjects --args '{request: " ~ request ~ ", finish: true}'", info=true) }}
{% endmacro %}

{#- Before a load ledger's lines are redacted: their source positions, so that a re-sent copy
    is stored redacted too. One MERGE: a rerun adds nothing. -#}
{% macro _erasure_keep_positions(relation, predicate, request) %}
    {%- do run_query("merge into " ~ erased_positions_relation() ~ " as kept using (select '"
        ~ expired_load_ledger_key(relation) ~ "' as ods_table, _source_partition as source_partition,"
        ~ " _source_offset as source_offset, '" ~ request ~ "' as request, current_timestamp() as erased_at from "
        ~ relation ~ " where " ~ predicate ~ " and _source_offset is not null group by _source_partition, _source_offset) as erased"
        ~ " on kept.ods_table = erased.ods_table and kept.source_partition = erased.source_partition"
        ~ " and kept.source_offset = erased.source_offset when not matched then insert *") -%}
{% endmacro %}

{#- A merge-on-read table keeps a deleted row's bytes in its data file (a delete file hides
    it): rewrite the files that have delete files, so no live file holds it -#}
{% macro _erasure_rewrite_deleted_rows(table) %}
    {%- set properties = table.node.config.get('tblproperties') or {} -%}
    {%- if 'merge-on-read' in [properties.get('write.delete.mode'), properties.get('write.update.mode'), properties.get('write.merge.mode')] -%}
        {%- do run_query(rewrite_data_files(table.relation, options={'delete-file-threshold': 1, 'remove-dangling-deletes': true})) -%}
    {%- endif -%}
{% endmacro %}

{% macro _erasure_finish(request, tables) %}
    {%- do acquire_run_lock(operation=true) -%}
    {%- set record = erasure_record_relation() -%}
    {%- if load_relation(record) is none -%}
        {{ exceptions.raise_compiler_error("erase_subjects: no erasure named " ~ request ~ " was run (ops.erasures does not exist)") }}
    {%- endif -%}
    {%- set steps = run_query("select table_name, action, row_count, detail, recorded_at, subject_count, requested_by from " ~ record
        ~ " where request = '" ~ request ~ "'").rows -%}
    {%- if not steps -%}
        {%- do release_run_lock(holder=invocation_id) -%}
        {{ exceptions.raise_compiler_error("erase_subjects: no erasure named " ~ request ~ " in " ~ record ~ ": run it with its user_ids first") }}
    {%- endif -%}
    {%- set changed = [] -%}
    {%- for step in steps if step[1] in ['redact', 'delete', 'detach', 'recompute'] and step[2] > 0 -%}
        {%- if step[0] not in changed -%}{%- do changed.append(step[0]) -%}{%- endif -%}
    {%- endfor -%}
    {#- an aggregate is finished only after its backfill: a commit after the erasure recorded its days -#}
    {%- for step in steps if step[1] == 'recompute' and step[2] > 0 -%}
        {%- set since = run_query("select count(*) from " ~ step[0] ~ ".snapshots where committed_at > timestamp '" ~ step[4] ~ "'").rows[0][0] -%}
        {%- if since == 0 -%}
            {%- do release_run_lock(holder=invocation_id) -%}
            {%- set span = step[3].split('..') -%}
            {{ exceptions.raise_compiler_error("erase_subjects: " ~ step[0] ~ " has not been recomputed since the erasure " ~ request
                ~ " (its days " ~ span[0] ~ " to " ~ span[1] ~ " still count the erased rows): run dbt build --select "
                ~ step[0].split('.')[-1] ~ " --event-time-start " ~ span[0] ~ " --event-time-end " ~ span[1] ~ " first") }}
        {%- endif -%}
    {%- endfor -%}
    {%- set started = modules.datetime.datetime.utcnow() -%}
    {%- set started_ms = (started - modules.datetime.datetime(1970, 1, 1)).total_seconds() * 1000 | int -%}
    {%- for name in changed | sort -%}
        {%- set relation = api.Relation.create(schema=name.split('.')[0], identifier=name.split('.')[1], type='table') -%}
        {%- set refs = run_query("select name, type from " ~ relation ~ ".refs where name != 'main'").rows -%}
        {%- for ref in refs -%}
            {%- do run_query("alter table " ~ relation ~ " drop " ~ (ref[1] | lower) ~ " `" ~ ref[0] ~ "`") -%}
        {%- endfor -%}
        {%- set expired = run_query("call spark_catalog.system.expire_snapshots(table => '" ~ relation ~ "', older_than => timestamp '"
            ~ started.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "', retain_last => 1)").rows[0] -%}
        {#- under the run lock no write is in flight: a file nothing references is a dead write's -#}
        {%- set orphans = run_query("select reflect('lakehouse.UnreferencedFiles', 'delete', '" ~ relation
            ~ "', cast(" ~ started_ms ~ " as bigint)) from values (1)").rows[0][0] | int -%}
        {%- set removed = expired[0] + expired[1] + expired[2] + orphans -%}
        {%- set detail = (refs | length) ~ " tags and branches dropped, " ~ expired[4] ~ " snapshots expired, " ~ removed
            ~ " data and delete files removed (" ~ orphans ~ " of them unreferenced)" -%}
        {%- do _erasure_record(request, relation, 'expire', removed, detail, steps[0][5], steps[0][6]) -%}
        {{ log("erasure " ~ request ~ ": " ~ relation ~ ": " ~ detail, info=true) }}
    {%- endfor -%}
    {%- do _erasure_record(request, '*', 'finished', changed | length, 'no snapshot, tag, branch or file of the changed tables holds the erased rows', steps[0][5], steps[0][6]) -%}
    {%- do release_run_lock(holder=invocation_id) -%}
    {{ log("erasure " ~ request ~ ": finished: " ~ changed | length ~ " tables hold no erased row in any snapshot or file", info=true) }}
{% endmacro %}
