{{ depends_on_landed_sources() }}
-- depends_on: {{ ref('dwd_quarantine__rejected_records') }}

{#- Landed = accepted + rejected, line by line, for every declared landing source
    (declared_landed_sources: a source added in yml is checked here without an edit). Each
    ODS line is placed exactly once: among its source's accepted lines (the `accepted_in`
    table, else the typed model's valid lines) or in the quarantine with a reason. Returns
    every line that is not, with how many places hold it (0: it vanished; 2: it is doubled;
    not landed: a row from nowhere). ODS itself is reconciled with the landing files by the
    Python tests. A scheduled run checks the lines of the loads since the last published run
    (since_last_publish), every other invocation every line. -#}
{%- set sources = declared_landed_sources() %}
{%- set untested = since_last_publish('_load_id') %}
{#- a file whose ODS lines retention expired (the compact ledger) is reconciled no more: its
    accepted and rejected rows outlive the lines they came from -#}
{%- set expired = expired_load_ledger() if execute else none %}

with
{%- for landed in sources %}

    {{ landed.source_table }}_landed as (
        select
            _source_file,
            _source_line,
            -- an erasure redacted the line: its accepted or rejected row is gone with it (a
            -- re-sent copy is refused as re-delivered, so it is placed once)
            startswith(_raw_line, '{"_erased":') as is_erased
        from {{ ref(landed.ods) }}
        where {{ untested }}
    ),

    {{ landed.source_table }}_placed as (
        {%- if landed.accepted_in %}
            select
                _source_file,
                _source_line
            from {{ ref(landed.accepted_in) }}
            where {{ untested }}
        {%- else %}
            select
                _source_file,
                _source_line
            from {{ ref(landed.typed) }}
            where reject_reason is null and {{ untested }}
        {%- endif %}
        union all
        select
            _source_file,
            _source_line
        from {{ ref('dwd_quarantine__rejected_records') }}
        where source_table = '{{ landed.source_table }}' and {{ untested }}
    ),

    {{ landed.source_table }}_placements as (
        select
            _source_file,
            _source_line,
            count(*) as placements
        from {{ landed.source_table }}_placed
        group by _source_file, _source_line
    ),

    {{ landed.source_table }}_expired as (
        {%- if expired is not none %}
            select source_file from {{ expired }}
            where ods_table = '{{ expired_load_ledger_key(ref(landed.ods)) }}'
        {%- else %}
            select cast(null as string) as source_file
            where false
        {%- endif %}
    ),

    {{ landed.source_table }}_unplaced as (
        select
            '{{ landed.source_table }}' as source_table,
            coalesce(ods._source_file, placed._source_file) as _source_file,
            coalesce(ods._source_line, placed._source_line) as _source_line,
            ods._source_line is not null as is_landed,
            coalesce(placed.placements, 0) as placements
        from {{ landed.source_table }}_landed as ods
        full outer join {{ landed.source_table }}_placements as placed
            on ods._source_file = placed._source_file and ods._source_line = placed._source_line
        where
            (
                ods._source_line is null
                or (coalesce(placed.placements, 0) != 1 and not (ods.is_erased and placed.placements is null))
            )
            and coalesce(ods._source_file, placed._source_file) not in (
                select expired.source_file from {{ landed.source_table }}_expired as expired
            )
    ){{ ',' if not loop.last }}
{%- endfor %}

{% for landed in sources %}
    select * from {{ landed.source_table }}_unplaced
    {{ 'union all' if not loop.last }}
{%- endfor %}
