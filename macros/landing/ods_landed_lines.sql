{#- The body of every ODS model: each landed line of the files this run may load (see
    landing_files_to_load), kept raw, with where it came from and which load brought it.
    A line is what lies between two newlines; a final newline ends the last line. Fields are
    parsed below ODS (landed_record), so a field no model declares yet is still here.
    Only the source identity (Kafka partition and offset) is typed here, once, to mark a
    record delivered again: `_is_redelivery` when an earlier load, or an earlier file or line
    of this load, holds the same identity (a connector restart re-sends offsets), or when
    retention expired a line at or after its offset in its partition (the compact ledger:
    Kafka hands out offsets in order, so it was delivered before, or is older than the
    window; either way it is refused, never loaded as new). A re-sent copy of a record an
    erasure redacted (erased_positions) is stored redacted too: the erased values never
    come back, and the copy is refused as re-delivered. -#}
{% macro ods_landed_lines(source_name, table_name) %}
{%- set landing = source(source_name, table_name) -%}
{%- set load = landing_files_to_load(source_name, table_name) -%}
{%- set first_new_offsets = _first_new_offsets(landing, load) -%}
{%- set expired = expired_load_ledger() if is_incremental() and load.files else none -%}
{%- set erased = erased_positions() if is_incremental() and load.files else none -%}
with scanned as (
    {%- if load.files %}
    -- line by line, in splits of at most spark.sql.files.maxPartitionBytes spread over the
    -- cores: a line lies in exactly one split (the reader finishes the line a split ends in
    -- and the next split skips it), and a split's lines come in file order, one after
    -- another in one scan partition, so their scan positions are consecutive
    select
        _metadata.file_path as _source_file,
        _metadata.file_size as _file_size,
        _metadata.file_modification_time as _file_modified_at,
        _metadata.file_block_start as _split_start,
        monotonically_increasing_id() as _scan_position,
        value as _raw_line
    from {{ landing }}
    where
        batch in ('{{ load.batches | join("', '") }}')
        and {{ landing_file_filter('_metadata.file_path', load.files) }}
    {%- else %}
    -- nothing to load: no landing file is read
    select
        cast(null as string) as _source_file,
        cast(null as bigint) as _file_size,
        cast(null as timestamp) as _file_modified_at,
        cast(null as bigint) as _split_start,
        cast(null as bigint) as _scan_position,
        cast(null as string) as _raw_line
    where false
    {%- endif %}
),

splits as (
    -- per split: its first line's scan position, and the lines of the file's earlier splits
    select
        _source_file,
        _split_start,
        first_position,
        coalesce(sum(line_count) over (
            partition by _source_file order by _split_start
            rows between unbounded preceding and 1 preceding
        ), 0) as lines_before
    from (
        select
            _source_file,
            _split_start,
            count(*) as line_count,
            min(_scan_position) as first_position
        from scanned
        group by _source_file, _split_start
    )
),

lines as (
    select
        scanned._source_file,
        scanned._file_size,
        scanned._file_modified_at,
        splits.lines_before + (scanned._scan_position - splits.first_position) + 1 as _source_line,
        scanned._raw_line
    from scanned
    inner join splits
        on
            scanned._source_file = splits._source_file
            and scanned._split_start = splits._split_start
),

identified as (
    select
        lines.*,
        {{ _source_identity() }},
        row_number() over (
            partition by {{ _source_identity(typed=false) }}
            order by _source_file asc, _source_line asc
        ) as delivery_rank
    from lines
){% if is_incremental() %},

delivered_before as (
    -- offsets only grow within a partition: history below this load's first new offset
    -- cannot hold them, and Iceberg skips those files by their offset bounds
    select distinct _source_partition, _source_offset from {{ this }}
    where {{ _offsets_from(first_new_offsets) }}
){% if expired is not none %},

expired_through as (
    -- per partition, the highest offset among the lines retention expired (the compact
    -- ledger): a line at or below it was delivered before, or is older than the window
    select source_partition, max(through_offset) as through_offset from {{ expired }}
    where ods_table = '{{ expired_load_ledger_key(this) }}' and source_partition is not null
    group by source_partition
){% endif %}{% if erased is not none %},

erased as (
    -- the source positions an erasure redacted in this table: a copy is stored redacted
    select source_partition, source_offset, max(request) as request from {{ erased }}
    where ods_table = '{{ expired_load_ledger_key(this) }}'
    group by source_partition, source_offset
){% endif %}{% endif %}

select
    {%- if erased is not none %}
    case
        -- as the erasure redacted the first copy (erasure config: its Kafka position kept)
        when erased.request is not null then to_json(named_struct(
            '_erased', erased.request,
            '_kafka_partition', get_json_object(identified._raw_line, '$._kafka_partition'),
            '_kafka_offset', get_json_object(identified._raw_line, '$._kafka_offset')
        ))
        else identified._raw_line
    end as _raw_line,
    {%- else %}
    identified._raw_line,
    {%- endif %}
    identified._source_file,
    identified._source_line,
    identified._file_size,
    identified._file_modified_at,
    nullif(regexp_extract(identified._source_file, 'batch=([0-9]+)/[^/]+$', 1), '') as _batch_id,
    identified._source_partition,
    identified._source_offset,
    coalesce(
        identified._source_partition is not null
        and identified._source_offset is not null
        and (
            identified.delivery_rank > 1
            {%- if is_incremental() %} or delivered_before._source_offset is not null{% endif %}
            {%- if expired is not none %} or identified._source_offset <= expired_through.through_offset{% endif %}
            {%- if erased is not none %} or erased.request is not null{% endif %}
        ),
        false
    ) as _is_redelivery,
    cast({{ current_load_id() }} as bigint) as _load_id,
    current_timestamp() as _loaded_at,
    {{ "timestamp_millis(" ~ load.listed_at_ms ~ ")" if load.listed_at_ms is not none else "cast(null as timestamp)" }}
        as _listed_at
from identified
{%- if is_incremental() %}
left join delivered_before
    on
        identified._source_partition = delivered_before._source_partition
        and identified._source_offset = delivered_before._source_offset
{%- endif %}
{%- if expired is not none %}
left join expired_through
    on identified._source_partition = expired_through.source_partition
{%- endif %}
{%- if erased is not none %}
left join erased
    on
        identified._source_partition = erased.source_partition
        and identified._source_offset = erased.source_offset
{%- endif %}
{%- endmacro %}

{#- The source identity of a landed line, typed: its Kafka partition and offset -#}
{% macro _source_identity(typed=true) %}
    {%- if typed -%}
        try_cast(get_json_object(_raw_line, '$._kafka_partition') as int) as _source_partition,
        try_cast(get_json_object(_raw_line, '$._kafka_offset') as bigint) as _source_offset
    {%- else -%}
        try_cast(get_json_object(_raw_line, '$._kafka_partition') as int),
        try_cast(get_json_object(_raw_line, '$._kafka_offset') as bigint)
    {%- endif -%}
{% endmacro %}

{#- Per Kafka partition, the lowest offset among the lines of the files to load, read from
    those files only (before the model's SQL runs): [[partition, offset], ...] -#}
{% macro _first_new_offsets(landing, load) %}
    {%- if not execute or not load.files or not is_incremental() -%}{{ return([]) }}{%- endif -%}
    {%- set query -%}
        select partition, min(offset) from (
            select
                try_cast(get_json_object(value, '$._kafka_partition') as int) as partition,
                try_cast(get_json_object(value, '$._kafka_offset') as bigint) as offset
            from {{ landing }}
            where
                batch in ('{{ load.batches | join("', '") }}')
                and {{ landing_file_filter('_metadata.file_path', load.files) }}
        )
        where partition is not null and offset is not null
        group by partition
    {%- endset -%}
    {{ return(run_query(query).rows | map('list') | list) }}
{% endmacro %}

{% macro _offsets_from(first_offsets) %}
    {%- if not first_offsets -%}false{%- else -%}
        (
            {%- for partition, offset in first_offsets %}
            (_source_partition = {{ partition }} and _source_offset >= {{ offset }})
            {{- ' or' if not loop.last }}
            {%- endfor %}
        )
    {%- endif -%}
{% endmacro %}
