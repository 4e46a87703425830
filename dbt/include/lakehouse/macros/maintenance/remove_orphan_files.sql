{#- CALL system.remove_orphan_files: deletes files under the table location that no
    snapshot references. `older_than_hours` may never be shorter than the safe minimum
    (var orphan_files_min_age_hours, 24 by default): a younger unreferenced file may belong
    to a write that has not committed yet, and deleting it would corrupt that commit.
    `dry_run` lists what would be deleted without deleting. -#}
{% macro remove_orphan_files(relation, older_than_hours=72, dry_run=false) %}
    {{ return(adapter.dispatch('remove_orphan_files')(relation, older_than_hours, dry_run)) }}
{% endmacro %}

{% macro lakehouse__remove_orphan_files(relation, older_than_hours, dry_run) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {%- set safe_minimum = lakehouse_var('orphan_files_min_age_hours') | float(24) -%}  {#- unparsable: the safe default -#}
    {%- set hours = older_than_hours | float(-1) -%}
    {#- written as `not >=` so that NaN ('nan' from a var) is refused too -#}
    {%- if not (hours >= safe_minimum) -%}
        {{ exceptions.raise_compiler_error("remove_orphan_files: older_than_hours must be >= " ~ safe_minimum ~ " for " ~ table_name ~ " (files of in-flight writes would be deleted); got " ~ older_than_hours) }}
    {%- endif -%}
    {%- if dry_run is not boolean -%}
        {{ exceptions.raise_compiler_error("remove_orphan_files: dry_run must be true or false for " ~ table_name) }}
    {%- endif -%}
    {%- set cutoff = modules.datetime.datetime.utcnow() - modules.datetime.timedelta(hours=hours) %}
    call spark_catalog.system.remove_orphan_files(
        table => '{{ table_name }}',
        older_than => timestamp '{{ cutoff.strftime('%Y-%m-%d %H:%M:%S') }}',
        dry_run => {{ 'true' if dry_run else 'false' }}
    )
{% endmacro %}
