{#- The compact load ledger: what retention removed from a load ledger (a table with config
    `load_ledger`, such as ODS), one row per landed file and Kafka partition of its expired
    lines. With it a project's ODS models still know those files as loaded and those source
    positions as delivered once the lines are gone (docs/retention.md). The nightly retention
    step writes it before its delete, in one MERGE: a rerun after a crash between the two adds
    nothing. -#}
{% macro expired_load_ledger_relation() %}
    {{ return(api.Relation.create(schema=platform_schema(), identifier='expired_load_ledger', type='table')) }}
{% endmacro %}

{#- The ledger's key for a load ledger table: `schema.table`, as the ODS model renders `this` -#}
{% macro expired_load_ledger_key(relation) %}
    {{ return(relation.schema ~ '.' ~ relation.identifier) }}
{% endmacro %}

{#- The statements that record, before a retention delete of `relation` where `predicate`
    holds, the expiring lines' files and positions: the table created if missing, then one
    MERGE of one row per file and Kafka partition. -#}
{% macro expired_load_ledger_sql(relation, predicate) %}
    {%- set ledger = expired_load_ledger_relation() -%}
    {%- set ddl -%}
        create table if not exists {{ ledger }} (
            ods_table string comment 'the load ledger the lines expired from (schema.table)',
            source_file string comment 'a landed file whose lines expired',
            source_partition int comment 'the Kafka partition of some of its lines (null: lines without one)',
            through_offset bigint comment 'the highest offset of that partition among those lines',
            line_count bigint comment 'how many lines of the file these are',
            file_size bigint,
            file_modified_at timestamp,
            batch_id string,
            load_id bigint,
            expired_at timestamp
        ) using iceberg
        tblproperties ('format-version' = '2', 'commit.retry.num-retries' = '20',
                       'write.distribution-mode' = 'none')
    {%- endset -%}
    {%- set merge -%}
        merge into {{ ledger }} as ledger
        using (
            select
                '{{ expired_load_ledger_key(relation) }}' as ods_table,
                _source_file as source_file,
                _source_partition as source_partition,
                max(_source_offset) as through_offset,
                count(*) as line_count,
                min(_file_size) as file_size,
                min(_file_modified_at) as file_modified_at,
                min(_batch_id) as batch_id,
                min(_load_id) as load_id,
                current_timestamp() as expired_at
            from {{ relation }}
            where {{ predicate }}
            group by _source_file, _source_partition
        ) as expiring
        on ledger.ods_table = expiring.ods_table
            and ledger.source_file = expiring.source_file
            and ledger.source_partition <=> expiring.source_partition
        when not matched then insert *
    {%- endset -%}
    {{ return([ddl, merge]) }}
{% endmacro %}

{#- The ledger when a retention step has written it, else none (no statement when the
    platform schema is in dbt's relation cache). -#}
{% macro expired_load_ledger() %}
    {{ return(load_relation(expired_load_ledger_relation())) }}
{% endmacro %}

{#- The highest load a published run wrote (write-audit-publish published it with every
    model reading it), or none when no run has been recorded: a load ledger's retention
    deletes no later load, so no line leaves before its readers took it. -#}
{% macro published_load_through() %}
    {%- set runs = wap_runs_relation() -%}
    {%- if load_relation(runs) is none -%}{{ return(none) }}{%- endif -%}
    {%- set rows = run_query("select coalesce(max(load_id), 0) from " ~ runs ~ " where status = 'published'").rows -%}
    {{ return(rows[0][0] | int) }}
{% endmacro %}
