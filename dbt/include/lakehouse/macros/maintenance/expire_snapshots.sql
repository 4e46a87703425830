{#- CALL system.expire_snapshots, always keeping a time-travel window: snapshots younger
    than `older_than_hours` and the last `retain_last` (>= 1) snapshots survive. A window
    shorter than `min_window_hours` (var min_snapshot_window_hours, 1 hour by default) is
    refused, so history cannot be wiped by a misconfiguration. -#}
{% macro expire_snapshots(relation, older_than_hours=72, retain_last=10, min_window_hours=1) %}
    {{ return(adapter.dispatch('expire_snapshots')(relation, older_than_hours, retain_last, min_window_hours)) }}
{% endmacro %}

{% macro lakehouse__expire_snapshots(relation, older_than_hours, retain_last, min_window_hours) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {#- config values rendered from vars arrive as strings; -1 marks "not a number" -#}
    {%- set older_than_hours = older_than_hours | float(-1) -%}
    {%- set retain_last = retain_last | int(-1) -%}
    {%- set min_window_hours = min_window_hours | float(1) -%}
    {#- written as `not >=` so that NaN ('nan' from a var) is refused too -#}
    {%- if not (older_than_hours >= 0 and older_than_hours >= min_window_hours) -%}
        {{ exceptions.raise_compiler_error("expire_snapshots: older_than_hours must be a number >= " ~ min_window_hours ~ " for " ~ table_name ~ "; got " ~ older_than_hours) }}
    {%- endif -%}
    {%- if retain_last < 1 -%}
        {{ exceptions.raise_compiler_error("expire_snapshots: retain_last must be >= 1 for " ~ table_name ~ "; got " ~ retain_last) }}
    {%- endif -%}
    {#- procedure arguments must be literals; the session time zone is UTC. Microseconds kept:
        a cutoff cut to the second spares the snapshots of its last second, which the
        decision (iceberg_commit_summary, in milliseconds) counts as expirable, so the next
        run would act again -#}
    {%- set cutoff = modules.datetime.datetime.utcnow() - modules.datetime.timedelta(hours=older_than_hours) %}
    call spark_catalog.system.expire_snapshots(
        table => '{{ table_name }}',
        older_than => timestamp '{{ cutoff.strftime('%Y-%m-%d %H:%M:%S.%f') }}',
        retain_last => {{ retain_last | int }}
    )
{% endmacro %}
