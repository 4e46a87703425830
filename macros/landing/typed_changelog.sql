{#- The typed model of a changelog source, from its declaration: every ODS line of
    `source_name.table_name` parsed, each declared field cast to the type its column's
    `meta.type` names (a string when it names none; `meta.column` renames it), the change
    envelope typed (`op`, `source_lsn`, `source_committed_at`, `kafka_partition`,
    `kafka_offset`), and the first rule the record breaks in `reject_reason`
    (changelog_reject_reason, on the key the table's `meta.changelog_key` names: one column,
    or a list of them for a composite primary key).
    A declared value that is present but does not cast is named by invalid_value_reason,
    never turned into a silent null. -#}
{% macro typed_changelog(source_name, table_name) %}
    {%- set ods_model = 'ods_' ~ source_name ~ '__' ~ table_name -%}
    {%- set ods_relation = ref(ods_model) -%}{#- unconditional: dbt learns the ref while parsing -#}
    {%- if not execute -%}{{ return('select 1') }}{%- endif -%}
    {%- set declaration = (graph.sources.values() | selectattr('source_name', 'equalto', source_name)
                            | selectattr('name', 'equalto', table_name) | first) -%}
    {%- if declaration is not defined or declaration is none -%}
        {{ exceptions.raise_compiler_error("typed_changelog: no source " ~ source_name ~ "." ~ table_name ~ " is declared") }}
    {%- endif -%}
    {%- set envelope = {
        'op': none, '_source_lsn': 'bigint', '_source_committed_at': 'timestamp',
        '_kafka_partition': 'int', '_kafka_offset': 'bigint'} -%}
    {%- set keys = changelog_key_columns(declaration, envelope.keys() | list) -%}
    {%- set missing = [] -%}
    {%- for field in envelope.keys() if field not in declaration.columns -%}
        {%- do missing.append(field) -%}
    {%- endfor -%}
    {%- if missing -%}
        {{ exceptions.raise_compiler_error("changelog source " ~ source_name ~ "." ~ table_name ~ " does not declare " ~ missing | join(', ') ~ " (docs/adding-a-source.md: the changelog record)") }}
    {%- endif -%}
    {%- set fields = [] -%}{#- [field, type or none, column name] of the row's own values -#}
    {%- for name, column in declaration.columns.items()
          if name not in envelope and name != '_corrupt_record' -%}
        {%- do fields.append([name, column.meta.get('type'), column.meta.get('column', name)]) -%}
    {%- endfor -%}
    {%- set generated = ['op', 'source_lsn', 'source_committed_at', 'kafka_partition', 'kafka_offset',
        'invalid_value_reason', 'invalid_arrival_reason', 'is_unparseable', 'raw_record', 'reject_reason',
        '_source_file', '_source_line', '_is_redelivery', '_batch_id', '_load_id', '_loaded_at'] -%}
    {%- for _, _, column in fields if column in generated -%}
        {{ exceptions.raise_compiler_error("changelog source " ~ source_name ~ "." ~ table_name ~ ": column " ~ column ~ " would clash with a column the typed model adds; rename it with meta.column") }}
    {%- endfor -%}
    {%- set key_columns = [] -%}
    {%- for name, _, column in fields if name in keys -%}{%- do key_columns.append(column) -%}{%- endfor -%}
    {%- set checked_values = [] -%}
    {%- for name, type, _ in fields if type and name not in keys -%}
        {%- do checked_values.append([name, type]) -%}
    {%- endfor -%}
    {%- do checked_values.append(['_source_committed_at', 'timestamp']) -%}
{#- subqueries, not CTEs: the run's rows are cached for the readers (dwd_landing__typed_rows), and Spark's
    cache never matches a plan that holds a CTE -#}
select
    *,
    {{ changelog_reject_reason(key_columns) }} as reject_reason
from (  -- noqa: ST05
    select
        ods.record.op,
        {%- for name, type, column in fields %}
        {%- if type %}
        try_cast(ods.record.{{ name }} as {{ type }}) as {{ column }},
        {%- elif name in keys %}
        nullif(trim(ods.record.{{ name }}), '') as {{ column }},  -- a blank key is no key
        {%- else %}
        ods.record.{{ name }} as {{ column }},
        {%- endif %}
        {%- endfor %}
        try_cast(ods.record._source_lsn as bigint) as source_lsn,
        try_cast(ods.record._source_committed_at as timestamp) as source_committed_at,
        try_cast(ods.record._kafka_partition as int) as kafka_partition,
        try_cast(ods.record._kafka_offset as bigint) as kafka_offset,
        {{ invalid_value_reason(checked_values, 'ods.record') }} as invalid_value_reason,
        {{ invalid_value_reason(
            [['_kafka_partition', 'int'], ['_kafka_offset', 'bigint']], 'ods.record'
        ) }} as invalid_arrival_reason,
        {{ landed_line_columns() }},
        {{ landed_field_columns(source_name, table_name) }}
    from ({{ parsed_landed_lines(source_name, table_name, ods_relation) }}) as ods
) as typed
{%- endmacro %}
