{#- CALL system.rewrite_data_files for a relation: compaction (binpack), clustering (sort)
    or zorder. Returns the SQL; `iceberg_maintenance` decides whether to run it.
    use-starting-sequence-number stays true: the rewritten files keep the sequence number
    of the snapshot the compaction started from, so an equality delete committed while it
    ran still applies to them (a newer number would resurrect the deleted rows, and
    Iceberg refuses that commit instead). -#}
{% macro rewrite_data_files(relation, strategy='binpack', sort_order=none, zorder_by=none, where=none, options={}) %}
    {{ return(adapter.dispatch('rewrite_data_files')(relation, strategy, sort_order, zorder_by, where, options)) }}
{% endmacro %}

{% macro lakehouse__rewrite_data_files(relation, strategy, sort_order, zorder_by, where, options) %}
    {%- set table_name = _iceberg_table_name(relation) -%}
    {%- if strategy not in ['binpack', 'sort', 'zorder'] -%}
        {{ exceptions.raise_compiler_error("rewrite_data_files: unknown strategy '" ~ strategy ~ "' for " ~ table_name ~ "; use binpack, sort or zorder") }}
    {%- endif -%}
    {%- set defaults = {'use-starting-sequence-number': 'true', 'partial-progress.enabled': 'true'} -%}
    {%- set merged = _iceberg_options(defaults, options, 'rewrite_data_files', [
        'target-file-size-bytes', 'min-file-size-bytes', 'max-file-size-bytes', 'min-input-files',
        'rewrite-all', 'max-file-group-size-bytes', 'partial-progress.enabled',
        'partial-progress.max-commits', 'partial-progress.max-failed-commits',
        'max-concurrent-file-group-rewrites', 'use-starting-sequence-number',
        'remove-dangling-deletes', 'delete-file-threshold', 'delete-ratio-threshold',
        'rewrite-job-order', 'output-spec-id', 'shuffle-partitions-per-file']) -%}
    {%- set sort_clause = none -%}
    {%- if strategy == 'sort' -%}
        {%- if not sort_order -%}
            {{ exceptions.raise_compiler_error("rewrite_data_files: strategy 'sort' needs a sort_order for " ~ table_name) }}
        {%- endif -%}
        {%- set sort_clause = _iceberg_sort_order(sort_order) -%}
    {%- elif strategy == 'zorder' -%}
        {%- if not zorder_by -%}
            {{ exceptions.raise_compiler_error("rewrite_data_files: strategy 'zorder' needs zorder_by columns for " ~ table_name) }}
        {%- endif -%}
        {%- set sort_clause = 'zorder(' ~ (_iceberg_identifiers(zorder_by) | join(', ')) ~ ')' -%}
        {%- set strategy = 'sort' -%}
    {%- endif -%}
    call spark_catalog.system.rewrite_data_files(
        table => '{{ table_name }}',
        strategy => '{{ strategy }}',
        {%- if sort_clause %}
        sort_order => '{{ sort_clause }}',
        {%- endif %}
        {%- if where %}
        {#- validated, so its only quotes delimit literals: escape them for the '...' argument #}
        where => '{{ _safe_predicate(where, 'rewrite_data_files', 'where') | replace("'", "\\'") }}',
        {%- endif %}
        options => {{ _iceberg_options_map(merged) }}
    )
{% endmacro %}
