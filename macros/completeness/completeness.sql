{#- Completeness watermarks: the data time up to which a table is complete, recorded by its
    writer after each commit that moves it, and read by downstream jobs instead of guessing.
    See docs/completeness.md.

    A model opts in with the config `completeness`:
      {'arrival_columns': ['ingested_at']}  complete through the newest arrival among its
                                            rows, minus var('completeness_allowance_hours')
                                            (an event arriving later than that is late)
      {'upstreams': ['dwd_client__events']} complete through the oldest of its upstreams'
                                            watermarks (it recomputes what they deliver)
    Several columns or upstreams: the minimum over them. -#}

{#- Post-hook: record this model's watermark when it moved, with the snapshot it describes. -#}
{% macro record_completeness() %}
    {%- set spec = config.get('completeness') -%}
    {%- if not execute or not spec or model.resource_type != 'model' -%}{{ return('') }}{%- endif -%}
    {%- set candidates = [] -%}
    {%- for column in spec.get('arrival_columns', []) -%}
        {%- set newest = run_query('select cast(max(' ~ column ~ ') - make_interval(0, 0, 0, 0, '
            ~ completeness_allowance_hours() ~ ') as string) from ' ~ this).columns[0].values()[0] -%}
        {%- do candidates.append(newest) -%}
    {%- endfor -%}
    {%- for upstream in spec.get('upstreams', []) -%}
        {%- do candidates.append(completeness_of(ref(upstream))) -%}
    {%- endfor -%}
    {%- if not candidates or none in candidates -%}
        {{ log(this ~ ": not complete through any time yet (a source has no watermark)", info=true) }}
        {{ return('') }}
    {%- endif -%}
    {%- set through = candidates | min -%}
    {%- if through == completeness_of(this) -%}{{ return('') }}{%- endif -%}
    {%- set relation = completeness_relation() -%}
    {%- do run_query('create schema if not exists ' ~ relation.schema) -%}
    {%- do run_query(completeness_ddl(relation)) -%}
    {%- set snapshot = run_query('select snapshot_id from ' ~ this ~ '.snapshots order by committed_at desc limit 1').columns[0].values()[0] -%}
    {%- do run_query("insert into " ~ relation ~ " values ('" ~ this.schema ~ "." ~ this.identifier ~ "', "
        ~ snapshot ~ ", timestamp'" ~ through ~ "', '" ~ invocation_id ~ "', current_timestamp())") -%}
    {{ log(this ~ ": complete through " ~ through, info=true) }}
    {{ return('') }}
{% endmacro %}

{#- The latest watermark recorded for `relation` ('YYYY-MM-DD HH:MM:SS' string), or none. -#}
{% macro completeness_of(relation) %}
    {%- if not execute -%}{{ return(none) }}{%- endif -%}
    {%- set log_relation = completeness_relation() -%}
    {%- if not _completeness_log_exists(log_relation) -%}{{ return(none) }}{%- endif -%}
    {%- set found = run_query("select cast(complete_through as string) from " ~ log_relation
        ~ " where table_name = '" ~ relation.schema ~ "." ~ relation.identifier
        ~ "' order by recorded_at desc limit 1").columns[0].values() -%}
    {{ return(found[0] if found else none) }}
{% endmacro %}

{% macro completeness_allowance_hours() %}
    {{- return(var('completeness_allowance_hours', var('max_event_lateness_days') * 24) | int) -}}
{% endmacro %}

{#- <schema_prefix>ops.completeness: one row per watermark move. -#}
{% macro completeness_relation() %}
    {%- set schema = var('schema_prefix', '') ~ var('maintenance_log_schema', 'ops') -%}
    {{ return(api.Relation.create(schema=schema, identifier='completeness', type='table')) }}
{% endmacro %}

{#- Asked of the catalog: dbt's relation cache knows only the schemas of the project's models. -#}
{% macro _completeness_log_exists(relation) %}
    {%- if run_query("show schemas like '" ~ relation.schema ~ "'") | length == 0 -%}{{ return(false) }}{%- endif -%}
    {{ return(run_query("show tables in " ~ relation.schema ~ " like '" ~ relation.identifier ~ "'") | length > 0) }}
{% endmacro %}

{% macro completeness_ddl(relation) %}
    create table if not exists {{ relation }} (
        table_name string comment '<schema>.<table>',
        snapshot_id bigint comment 'the snapshot the watermark describes',
        complete_through timestamp comment 'data time up to which the table is complete',
        run_id string comment 'dbt invocation id of the writing run',
        recorded_at timestamp
    ) using iceberg
    tblproperties ('format-version' = '2', 'write.distribution-mode' = 'none',
                   'write.metadata.delete-after-commit.enabled' = 'true')
{% endmacro %}

{#- `dbt run-operation completeness`: every table's latest watermark, and whether the snapshot
    it describes is still the table's current one. -#}
{% macro completeness() %}
    {%- set relation = completeness_relation() -%}
    {%- if not _completeness_log_exists(relation) -%}
        {{ print("no watermark recorded yet (" ~ relation ~ " does not exist)") }}
        {{ return('') }}
    {%- endif -%}
    {%- set rows = run_query("select table_name, cast(complete_through as string), snapshot_id, cast(recorded_at as string) from (
        select *, row_number() over (partition by table_name order by recorded_at desc) as rank from " ~ relation ~ "
    ) where rank = 1 order by table_name").rows -%}
    {%- for row in rows -%}
        {{ print(row[0] ~ "  complete through " ~ row[1] ~ "  (snapshot " ~ row[2] ~ ", recorded " ~ row[3] ~ ")") }}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}
