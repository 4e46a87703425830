{{ config(partition_by=['source_table'], post_hook=['{{ record_checked_through() }}']) }}
{{ depends_on_landed_sources() }}
-- depends_on: {{ ref('dwd_landing__typed_rows') }} (this run's typed rows: typed_rows)

{#- Every landed record that did not make it into DWD, with the reason, for every declared
    landing source (declared_landed_sources: a source added in yml is covered here without
    an edit). Together with the DWD tables this accounts for every ODS row: landed =
    accepted + rejected (assert_every_landed_line_is_placed). Each source has its own
    load-id watermark: the higher of its rows' and the load it has read the source through
    (record_checked_through: a source with no reject is not read again). -#}
{%- set sources = declared_landed_sources() %}
{%- set filters = {} %}
{%- for landed in sources %}
    {%- do filters.update({landed.source_table: "source_table = '" ~ landed.source_table ~ "'"}) %}
{%- endfor %}
{#- every source's watermark in one statement -#}
{%- set watermarks = load_watermarks(filters, at_least=checked_through()) %}
{%- set columns = [
    'reject_reason', 'kafka_partition', 'kafka_offset', 'raw_record',
    '_source_file', '_source_line', '_batch_id', '_load_id', '_loaded_at',
] %}

with
{%- for landed in sources %}
    {%- set after = watermarks[landed.source_table] if watermarks is not none else none %}
    {%- set new_loads = loaded_since_last_run(
        target_filter=filters[landed.source_table], watermark=after
    ) %}

    {{ landed.source_table }}_new as (
        select * from {{ typed_rows(ref(landed.typed), after=after) }}
        where {{ new_loads }}
    ),
    {%- if landed.accepted_in %}
        {%- set window = new_events_window(ref(landed.ods), new_loads, typed=ref(landed.typed)) %}

        {{ landed.source_table }}_resent as (
            -- valid, but another delivery of a record already accepted (another line: the accepted
            -- line itself is in {{ landed.accepted_in }}); an earlier copy of a new event can only
            -- lie in the days a new event can have
            select
                incoming.*,
                'duplicate_{{ landed.unique_key }}' as duplicate_reason
            from {{ landed.source_table }}_new as incoming
            inner join {{ ref(landed.accepted_in) }} as accepted
                on incoming.{{ landed.unique_key }} = accepted.{{ landed.unique_key }}
            where
                {{ in_events_window(window, 'accepted.event_at') }}
                and incoming.reject_reason is null
                and not (
                    incoming._source_file = accepted._source_file
                    and incoming._source_line = accepted._source_line
                )
        ),
    {%- endif %}
{%- endfor %}

rejected as (
    {%- for landed in sources %}
        select '{{ landed.source_table }}' as source_table, {{ columns | join(', ') }}
        from {{ landed.source_table }}_new
        where reject_reason is not null
        {%- if landed.accepted_in %}
            union all
            select
                '{{ landed.source_table }}' as source_table,
                duplicate_reason as reject_reason,
                {{ columns[1:] | join(', ') }}
            from {{ landed.source_table }}_resent
        {%- endif %}
        {{ 'union all' if not loop.last }}
    {%- endfor %}
)

-- the partition column is not the first: SeaweedFS's REST catalog (the s3 target's) refuses a
-- table partitioned by its first column ("Malformed request", docs/findings.md)
select reject_reason, source_table, {{ columns[1:] | join(', ') }}
from rejected
