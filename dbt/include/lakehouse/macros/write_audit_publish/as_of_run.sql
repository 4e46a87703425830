{#- Consistent reads across tables. The Hive catalog commits one table at a time, so a reader
    who needs every layer at one point in time reads each table as of the same published run:

        select ... from {{ as_of_run(ref('dim_users'), 42) }} join {{ as_of_run(ref('dws_user__daily'), 42) }} ...

    A table the run published carries the tag run_<id>; a table it did not touch is read as
    of the moment the run's publish ended (its main did not move during the run: the run
    lock). as_of_day reads the day's tag day_<yyyymmdd> (the last publish of that UTC day),
    or the end of that day for a table no run published that day. -#}
{% macro as_of_run(relation, run) %}
    {%- if not execute -%}{{ return(relation) }}{%- endif -%}
    {%- set load_id = run | int -%}
    {%- if _has_ref(relation, 'run_' ~ load_id) -%}
        {{ return(relation ~ " version as of 'run_" ~ load_id ~ "'") }}
    {%- endif -%}
    {%- set rows = run_query("select cast(finished_at as string) from " ~ wap_runs_relation()
        ~ " where load_id = " ~ load_id ~ " and status = 'published'").rows if load_relation(wap_runs_relation()) is not none else [] -%}
    {%- if not rows -%}
        {{ exceptions.raise_compiler_error("as_of_run: run " ~ load_id ~ " was not published (dbt run-operation published_runs lists the runs)") }}
    {%- endif -%}
    {{ return(relation ~ " timestamp as of '" ~ rows[0][0] ~ "'") }}
{% endmacro %}

{% macro as_of_day(relation, day) %}
    {%- if not execute -%}{{ return(relation) }}{%- endif -%}
    {%- set date = modules.datetime.datetime.strptime(day | string, '%Y-%m-%d') -%}
    {%- set tag = 'day_' ~ date.strftime('%Y%m%d') -%}
    {%- if _has_ref(relation, tag) -%}
        {{ return(relation ~ " version as of '" ~ tag ~ "'") }}
    {%- endif -%}
    {{ return(relation ~ " timestamp as of '" ~ date.strftime('%Y-%m-%d') ~ " 23:59:59.999999'") }}
{% endmacro %}

{% macro _has_ref(relation, name) %}
    {{ return(run_query("select 1 from " ~ relation ~ ".refs where name = '" ~ name ~ "'").rows | length > 0) }}
{% endmacro %}

{#- dbt run-operation published_runs [--args '{limit: 20}']: the newest write-audit-publish runs. -#}
{% macro published_runs(limit=20) %}
    {%- set runs = wap_runs_relation() -%}
    {%- if load_relation(runs) is none -%}
        {{ print("no write-audit-publish run yet") }}
        {{ return('') }}
    {%- endif -%}
    {%- for row in run_query("select load_id, status, cast(finished_at as string), branch, tables, message from "
          ~ runs ~ " order by load_id desc limit " ~ limit | int).rows -%}
        {{ print("run " ~ row[0] ~ "  " ~ row[1] ~ "  " ~ row[2] ~ "  " ~ (("tag run_" ~ row[0]) if row[1] == 'published' else ("branch " ~ row[3])) ~ "  tables: " ~ (row[4] or '-') ~ "  (" ~ row[5] ~ ")") }}
    {%- endfor -%}
{% endmacro %}
