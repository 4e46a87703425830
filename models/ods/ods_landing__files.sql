{{ config(materialized='view') }}
{{ depends_on_landed_sources() }}

{#- The load ledger, readable: every file in the landing zone and every file ODS loaded, one
    row each, with its state:
      loaded              in ODS (its lines, load id and batch), or in the compact ledger
                          once retention expired its lines (expired_load_ledger);
      waiting_for_marker  its batch folder has no _SUCCESS yet: not loaded, not half-loaded;
      abandoned           still waiting after var landing_abandoned_after_hours: a writer died;
      not_loaded_yet      complete but not in ODS: the next run loads it;
      changed_after_load  the file's size or time differs from what ODS loaded (never reloaded);
      gone_after_load     loaded, no longer in the landing zone (retention).
    A view: it reads the landing listing and ODS when queried, nothing is stored. -#}
{%- set sources = declared_landed_sources() %}
{%- set expired = expired_load_ledger() if execute else none %}

with listed as (
    {%- for landed in sources %}
        select
            '{{ landed.source_table }}' as source_table,
            path as file_path,
            length as file_size,
            modificationtime as file_modified_at
        from {{ source(landed.source_name, landed.listing) }}
        {{ 'union all' if not loop.last }}
    {%- endfor %}
),

loaded as (
    {%- for landed in sources %}
        select
            '{{ landed.source_table }}' as source_table,
            _source_file as file_path,
            min(_file_size) as file_size,
            min(_file_modified_at) as file_modified_at,
            min(_batch_id) as batch_id,
            min(_load_id) as load_id,
            count(*) as line_count
        from {{ ref(landed.ods) }}
        group by _source_file
        {%- if expired is not none %}
        union all
        -- the files whose lines retention expired: loaded, as the compact ledger says
        select
            '{{ landed.source_table }}' as source_table,
            source_file as file_path,
            min(file_size) as file_size,
            min(file_modified_at) as file_modified_at,
            min(batch_id) as batch_id,
            min(load_id) as load_id,
            sum(line_count) as line_count
        from {{ expired }}
        where
            ods_table = '{{ expired_load_ledger_key(ref(landed.ods)) }}'
            and source_file not in (select _source_file from {{ ref(landed.ods) }})
        group by source_file
        {%- endif %}
        {{ 'union all' if not loop.last }}
    {%- endfor %}
),

folders as (
    select
        folder,
        cast(reflect('lakehouse.LandingFolders', 'isComplete', folder) as boolean) as is_complete
    from (select distinct regexp_extract(file_path, '^(.*)/[^/]+$', 1) as folder from listed) as distinct_folders
)

select
    coalesce(listed.source_table, loaded.source_table) as source_table,
    coalesce(listed.file_path, loaded.file_path) as file_path,
    coalesce(listed.file_size, loaded.file_size) as file_size,
    coalesce(listed.file_modified_at, loaded.file_modified_at) as file_modified_at,
    coalesce(
        loaded.batch_id,
        nullif(regexp_extract(listed.file_path, 'batch=([0-9]+)/[^/]+$', 1), '')
    ) as batch_id,
    loaded.load_id,
    loaded.line_count,
    case
        when listed.file_path is null then 'gone_after_load'
        when
            loaded.file_path is not null
            and (
                listed.file_size != loaded.file_size
                or listed.file_modified_at != loaded.file_modified_at
            )
            then 'changed_after_load'
        when loaded.file_path is not null then 'loaded'
        when folders.is_complete then 'not_loaded_yet'
        when
            listed.file_modified_at
            < current_timestamp() - make_interval(0, 0, 0, 0, {{ var('landing_abandoned_after_hours') }})
            then 'abandoned'
        else 'waiting_for_marker'
    end as file_state
from listed
full outer join loaded
    on listed.source_table = loaded.source_table and listed.file_path = loaded.file_path
left join folders on regexp_extract(listed.file_path, '^(.*)/[^/]+$', 1) = folders.folder
