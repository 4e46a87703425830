{#- A backfill recomputes a range of whole days of the models that declare `backfill_by` (the
    column whose days partition them), after a fix, with dbt's own flags:

        dbt build --select dwd_client__events+ --event-time-start 2026-01-03 --event-time-end 2026-01-10

    Such a model then replaces exactly those days (dynamic partition overwrite of its rows of
    the range; a day left with no row is deleted) and leaves every other day's files
    untouched. Models without `backfill_by` run as scheduled. See docs/backfill.md. -#}

{#- This model's backfill in this run: none, or {start, end, days} ('YYYY-MM-DD' strings; end
    exclusive, as dbt's --event-time-end). None on a first build or a full refresh, which
    build every day anyway. -#}
{% macro model_backfill() %}
    {%- if not config.get('backfill_by') or not is_incremental() -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(backfill_range()) }}
{% endmacro %}

{% macro backfill_range() %}
    {%- set start = invocation_args_dict.get('event_time_start') -%}
    {%- set end = invocation_args_dict.get('event_time_end') -%}
    {%- if start is none or end is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set bounds = [] -%}
    {%- for bound in [start, end] -%}
        {%- set moment = modules.datetime.datetime.fromisoformat(bound | string) -%}
        {%- if moment.hour or moment.minute or moment.second or moment.microsecond -%}
            {{ exceptions.raise_compiler_error(
                "backfill: " ~ bound ~ " is not a midnight: a backfill replaces whole days "
                ~ "(the tables are partitioned by day); give dates like 2026-01-03") }}
        {%- endif -%}
        {%- do bounds.append(moment.date()) -%}
    {%- endfor -%}
    {%- set days = [] -%}
    {%- for offset in range((bounds[1] - bounds[0]).days) -%}
        {%- do days.append((bounds[0] + modules.datetime.timedelta(days=offset)).isoformat()) -%}
    {%- endfor -%}
    {{ return({'start': bounds[0].isoformat(), 'end': bounds[1].isoformat(), 'days': days}) }}
{% endmacro %}

{#- `column` (a date or a timestamp) within the backfill's days: string literals, which Spark
    casts to the column's type, so Iceberg prunes by partition. -#}
{% macro backfill_filter(backfill, column) %}
    ({{ column }} >= '{{ backfill.start }}' and {{ column }} < '{{ backfill.end }}')
{%- endmacro %}

{#- The model's SQL as a backfill writes it: only its rows of the range. A partition
    overwrite replaces every day it writes, so rows of other days (a model that ignores the
    range) must never reach it: those days keep their files whatever the model computes. -#}
{% macro backfill_rows(backfill, sql, column) %}
    select * from (
        {{ sql }}
    ) as backfill_rows
    where {{ backfill_filter(backfill, column) }}
{%- endmacro %}

{#- After the write: the range's days the overwrite wrote no file for (the recomputation left
    them without any row) still hold their old rows; delete them. The days written are read
    from the new snapshot's added files (metadata: each file's lower bound of `column`); none
    when the overwrite committed nothing (`head_before` still the head of main). -#}
{% macro backfill_finish(relation, column, backfill, head_before) %}
    {%- set head = backfill_head(relation) -%}
    {%- set written = [] if head == head_before else run_query(
        "select distinct cast(to_date(readable_metrics." ~ column ~ ".lower_bound) as string)"
        ~ " from " ~ relation ~ ".entries where snapshot_id = " ~ head
        ~ " and status = 1 and data_file.content = 0").columns[0].values() | list -%}
    {%- do delete_days(relation, column, backfill.days | reject('in', written) | list, 'backfill of ' ~ relation) -%}
{% endmacro %}

{#- Delete the rows of `days` ('YYYY-MM-DD' strings) from `relation` (`column`: its day, a
    date or a timestamp), saying why in the log. -#}
{% macro delete_days(relation, column, days, why) %}
    {%- if days -%}
        {{ log(why ~ ": no row left for " ~ days | join(', ') ~ ", deleted", info=true) }}
        {%- call statement('delete_days') -%}
            delete from {{ relation }} where {{ days_predicate(days, column) }}
        {%- endcall -%}
    {%- endif -%}
{% endmacro %}

{#- `column` within one of `days`: a range per day, which Iceberg prunes partitions by. -#}
{% macro days_predicate(days, column) %}
    {%- for day in days -%}
        {%- set next_day = modules.datetime.date.fromisoformat(day) + modules.datetime.timedelta(days=1) -%}
        {{ backfill_filter({'start': day, 'end': next_day.isoformat()}, column) }}{{ ' or ' if not loop.last }}
    {%- endfor -%}
{% endmacro %}

{#- The snapshot at the head of `relation`'s main branch. -#}
{% macro backfill_head(relation) %}
    {{ return(run_query("select snapshot_id from " ~ relation ~ ".refs where name = 'main'").columns[0].values()[0]) }}
{% endmacro %}
