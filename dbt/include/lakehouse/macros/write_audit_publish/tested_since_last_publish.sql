{#- Data tests that scale with the batch (docs/running-dbt.md#data-tests).

    A published `dbt build` of the whole schedule passed every error test on everything it
    wrote, so a scheduled run (write-audit-publish on) needs to test only the rows written
    since the last such run: those of loads above its load id (a published `dbt run`, or a
    build of a selection, tested less and does not count: `tested` in ops.wap_runs). Any
    other invocation (`dbt test`, the
    nightly `dbt test --selector reconciliation`, a developer's `dbt build -s ...`, a full
    refresh, a backfill) tests every row. -#}

{#- The highest load id of a published run that tested everything, as a number, in a
    scheduled run; none in any other invocation (test every row). 0 before the first publish. Read once per run (a run
    publishes only at its end). -#}
{% macro last_published_load() %}
    {%- if not execute or not wap_requested() -%}{{ return(none) }}{%- endif -%}
    {#- a full refresh or a backfill rewrites rows of loads already published: test them all -#}
    {%- if flags.FULL_REFRESH or invocation_args_dict.get('event_time_start') is not none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set known = adapter.last_tested_load() -%}
    {%- if known is not none -%}{{ return(known) }}{%- endif -%}
    {%- set runs = wap_runs_relation() -%}
    {%- set found = 0 -%}
    {#- only a run that tested every row it wrote (a table from before `tested`: none) -#}
    {%- if load_relation(runs) is not none and wap_runs_have_tested_column(runs) -%}
        {%- do adapter.note_run_records_ready() -%}  {#- _wap_record needs not check again -#}
        {%- set found = run_query("select coalesce(max(load_id), 0) from " ~ runs ~ " where status = 'published' and tested").rows[0][0] -%}
    {%- endif -%}
    {{ return(adapter.note_last_tested_load(found)) }}
{% endmacro %}

{#- A predicate on a load-id column: its rows not yet tested by a published run (a null load
    id counts as untested), or `true` outside a scheduled run. For singular tests. -#}
{% macro since_last_publish(column) %}
    {%- set published = last_published_load() -%}
    {%- if published is none -%}{{ return('true') }}{%- endif -%}
    {{ return('(' ~ column ~ ' is null or ' ~ column ~ ' > ' ~ published ~ ')') }}
{% endmacro %}

{#- dbt's `where` config, with one placeholder: `__since_last_publish__(<load-id column>)`
    becomes since_last_publish(<column>) in a scheduled run; in any other invocation a
    `where` holding it is dropped and the test reads the whole table. `__relation__` names the
    tested relation (a test of touched partitions: `day in (select day from __relation__
    where __since_last_publish__(...))`). -#}
{% macro lakehouse__get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- set placeholder = '__since_last_publish__\\(([A-Za-z_][A-Za-z0-9_]*)\\)' -%}
    {%- if where and modules.re.search(placeholder, where) -%}
        {%- set published = last_published_load() -%}
        {%- if published is none -%}
            {%- set where = '' -%}
        {%- else -%}
            {%- set where = modules.re.sub(placeholder, '(\\1 is null or \\1 > ' ~ published ~ ')', where) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if where -%}
        {%- set where = where | replace('__relation__', relation | string) -%}
        {{ return('(select * from ' ~ relation ~ ' where ' ~ where ~ ') dbt_subquery') }}
    {%- endif -%}
    {{ return(relation) }}
{%- endmacro %}
