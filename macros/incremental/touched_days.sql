{#- The days a DWS model must recompute: the days of the upstream rows loaded since its last
    run, resolved before the model's SQL runs (run_query) and returned as a list of
    'YYYY-MM-DD' strings; none on a first build (every day). A backfill's days instead when
    the run backfills this model. The materialization is told the days: one of them the
    recomputation leaves without any row is emptied (clear_days_left_empty), never left
    holding its old rows.
      upstream       the model read (events, or a dimension's state)
      day            the upstream's expression of a row's day (`event_date`, `to_date(created_at)`)
      since_column   the upstream's load id the watermark compares (`_checked_load_id` for a
                     dimension's state: it advances for deletes too)
      target_column  this model's watermark column -#}
{% macro touched_days(upstream, day, since_column='_load_id', target_column='_max_load_id') %}
    {%- if not execute or model.resource_type == 'unit_test' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set backfill = model_backfill() -%}
    {%- if backfill -%}
        {{ return(backfill.days) }}
    {%- endif -%}
    {%- set days = none -%}
    {%- if is_incremental() -%}
        {%- set query -%}
            select distinct cast({{ day }} as string) from {{ upstream }}
            where {{ loaded_since_last_run(column=since_column, target_column=target_column) }}
                and {{ day }} is not null
            order by 1
        {%- endset -%}
        {%- set days = run_query(query).columns[0].values() | list -%}
    {%- endif -%}
    {%- do adapter.note_recomputed_days(this, days) -%}
    {{ return(days) }}
{% endmacro %}

{#- After an overwrite of the recomputed `days`: those it wrote no row for still hold their
    old rows (a dynamic partition overwrite replaces only the days it writes); delete them.
    `column`: the model's day column (its config `backfill_by`), a partition column. The days
    written are read from the summary of the commit the overwrite made on the run's branch
    (or main): with `write.summary.partition-limit` set (the `dws` folder) it names each
    partition it added files to. Without it (a table created before the setting, which is
    then set for the next runs), past the limit, or when a partition path is not
    `<column>=YYYY-MM-DD`, they are read from the recomputed rows instead (`recomputed`, the
    model's temporary view: its query runs again). None written when the overwrite committed
    nothing (`head_before` still the head). A day left without rows that holds none either is
    not deleted again (no empty commit). -#}
{% macro clear_days_left_empty(relation, column, days, head_before, recomputed) %}
    {%- if not column -%}
        {{ exceptions.raise_compiler_error(relation ~ " recomputes days (touched_days) without naming its day column: set config backfill_by") }}
    {%- endif -%}
    {%- set head = written_head(relation) -%}
    {%- set written = _days_in_partition_paths(head.partitions, column) -%}
    {%- if head.snapshot_id == head_before.snapshot_id -%}
        {%- set written = [] -%}
    {%- elif written is none -%}
        {%- set limit = config.get('tblproperties', {}).get('write.summary.partition-limit') -%}
        {%- if limit and head.partitions is none -%}
            {%- do run_query("alter table " ~ relation ~ " set tblproperties ('write.summary.partition-limit' = '" ~ limit ~ "')") -%}
        {%- endif -%}
        {%- set written = run_query("select distinct cast(to_date(" ~ column ~ ") as string) from "
            ~ recomputed).columns[0].values() | list -%}
    {%- endif -%}
    {%- set left_empty = days | reject('in', written) | list -%}
    {%- if left_empty -%}
        {%- set holding = run_query("select distinct cast(to_date(" ~ column ~ ") as string) from "
            ~ relation ~ " where " ~ days_predicate(left_empty, column)).columns[0].values() | list -%}
        {%- do delete_days(relation, column, left_empty | select('in', holding) | list, relation ~ " recomputed") -%}
    {%- endif -%}
{% endmacro %}

{#- The days ('YYYY-MM-DD') of `column` in partition paths like `comment_date=2026-01-02` or
    `event_date=2026-01-02/event_type=play`; none when a path has no such day (then the
    caller reads the days another way: never "nothing written" by mistake). -#}
{% macro _days_in_partition_paths(paths, column) %}
    {%- if paths is none -%}{{ return(none) }}{%- endif -%}
    {%- set days = [] -%}
    {%- for path in paths -%}
        {%- set found = [] -%}
        {%- for field in path.split('/') if field.startswith(column ~ '=') -%}
            {%- set value = field.split('=', 1)[1] -%}
            {%- if modules.re.match('^[0-9]{4}-[0-9]{2}-[0-9]{2}$', value) -%}
                {%- do found.append(value) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if found | length != 1 -%}{{ return(none) }}{%- endif -%}
        {%- do days.append(found[0]) -%}
    {%- endfor -%}
    {{ return(days) }}
{% endmacro %}

{#- {snapshot_id, partitions} of the head of the ref this run writes `relation` on (its
    write-audit-publish branch, or main): the partition paths its commit added data files to,
    from the commit's summary, or none when the summary does not list them. -#}
{% macro written_head(relation) %}
    {%- set rows = run_query("select s.snapshot_id, s.summary['partition-summaries-included'],"
        ~ " concat_ws('|', transform(filter(map_entries(s.summary), e -> e.key like 'partitions.%'"
        ~ " and e.value like '%added-data-files%'), e -> substr(e.key, 12)))"
        ~ " from " ~ relation ~ ".refs r join " ~ relation ~ ".snapshots s on s.snapshot_id = r.snapshot_id"
        ~ " where r.name = '" ~ (wap_active_branch() or 'main') ~ "'").rows -%}
    {%- if not rows -%}{{ return({'snapshot_id': none, 'partitions': none}) }}{%- endif -%}
    {%- set listed = rows[0][1] == 'true' -%}
    {{ return({'snapshot_id': rows[0][0],
               'partitions': (rows[0][2].split('|') if rows[0][2] else []) if listed else none}) }}
{% endmacro %}

{#- touched_days of an event table (partitioned by `event_date`); only the complete ones with
    var publish_complete_days_only (macros/completeness/). -#}
{% macro touched_event_days(upstream, target_column='_max_load_id') %}
    {%- set days = touched_days(upstream, 'event_date', target_column=target_column) -%}
    {%- if execute and model.resource_type != 'unit_test' and var('publish_complete_days_only')
          and not model_backfill() -%}
        {%- set days = complete_days_only(upstream, days) -%}
        {%- do adapter.note_recomputed_days(this, days) -%}
    {%- endif -%}
    {{ return(days) }}
{% endmacro %}

{#- With var publish_complete_days_only: of the days to compute (`days`; none = every day),
    those the upstream's completeness watermark covers, plus the days it newly covered since
    this model's own watermark (days that waited on an earlier run). The others wait, with a
    log line. A day is complete when the watermark has passed its end. -#}
{% macro complete_days_only(upstream, days) %}
    {%- set through = completeness_of(upstream) -%}
    {%- if through is none -%}
        {{ log(this ~ ": " ~ upstream ~ " has no completeness watermark yet: every day waits", info=true) }}
        {{ return([]) }}
    {%- endif -%}
    {%- set through_day = through[:10] -%}
    {%- if days is none -%}
        {%- set days = run_query('select distinct cast(event_date as string) from ' ~ upstream).columns[0].values() | list -%}
    {%- endif -%}
    {%- set previous = completeness_of(this) -%}
    {%- set covered_query -%}
        select distinct cast(event_date as string) from {{ upstream }}
        where event_at < '{{ through_day }}'
        {%- if previous %} and event_at >= '{{ previous[:10] }}'{% endif %}
    {%- endset -%}
    {%- set candidates = run_query(covered_query).columns[0].values() | list -%}
    {%- set candidates = (candidates + days) | unique | sort -%}
    {%- set waiting = candidates | reject('lt', through_day) | list -%}
    {%- if waiting -%}
        {{ log(this ~ ": " ~ waiting | join(', ') ~ " not complete yet (" ~ upstream
            ~ " complete through " ~ through ~ "): left for a later run", info=true) }}
    {%- endif -%}
    {{ return(candidates | select('lt', through_day) | list) }}
{% endmacro %}

{#- A filter on `column` (a timestamp whose day partitions the upstream) selecting `days`
    as literal ranges, which Iceberg turns into partition pruning; `true` when `days` is
    none (a first build), `false` when it is empty. -#}
{% macro days_filter(days, column='event_at') %}
    {%- if days is none -%}true
    {%- elif not days -%}false
    {%- else -%}
        (
            {%- for day in days %}
            ({{ column }} >= timestamp'{{ day }} 00:00:00' and {{ column }} < timestamp'{{ day }} 00:00:00' + interval 1 day)
            {{- ' or' if not loop.last }}
            {%- endfor %}
        )
    {%- endif -%}
{% endmacro %}
