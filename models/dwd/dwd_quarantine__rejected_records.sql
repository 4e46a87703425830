{{ config(partition_by=['source_table']) }}

{#- Every landed record that did not make it into DWD, with the reason. Together with the
    DWD tables this accounts for every ODS row: landed = accepted + rejected. Each source
    has its own load-id watermark. -#}
{%- set window = new_events_window(
    ref('ods_client__events'), target_filter="source_table = 'client_events'"
) %}

with accepted_in_window as (
    -- an earlier copy of a new event can only lie in the days a new event can have
    select * from {{ ref('dwd_client__events') }}
    where {{ in_events_window(window) }}
),

client_events_new as (
    select * from {{ ref('dwd_client__events_checked') }}
    where {{ loaded_since_last_run(target_filter="source_table = 'client_events'") }}
),

appdb_users_new as (
    select * from {{ ref('dwd_appdb__user_changes_checked') }}
    where {{ loaded_since_last_run(target_filter="source_table = 'appdb_users'") }}
),

appdb_videos_new as (
    select * from {{ ref('dwd_appdb__video_changes_checked') }}
    where {{ loaded_since_last_run(target_filter="source_table = 'appdb_videos'") }}
),

resent_events as (
    -- valid, but another delivery of an event already in the detail table (another line:
    -- the accepted line itself is in the detail table)
    select
        client_events_new.*,
        'duplicate_event_id' as duplicate_reason
    from client_events_new
    inner join accepted_in_window as accepted
        on client_events_new.event_id = accepted.event_id
    where
        client_events_new.reject_reason is null
        and not (
            client_events_new._source_file = accepted._source_file
            and client_events_new._source_line = accepted._source_line
        )
),

rejected as (
    {% for source_table in ['client_events', 'appdb_users', 'appdb_videos'] %}
        select
            '{{ source_table }}' as source_table,
            reject_reason,
            kafka_partition,
            kafka_offset,
            raw_record,
            _source_file,
            _source_line,
            _batch_id,
            _load_id,
            _loaded_at
        from {{ source_table }}_new
        where reject_reason is not null
        union all
    {% endfor %}
    select
        'client_events' as source_table,
        duplicate_reason as reject_reason,
        kafka_partition,
        kafka_offset,
        raw_record,
        _source_file,
        _source_line,
        _batch_id,
        _load_id,
        _loaded_at
    from resent_events
)

select
    source_table,
    reject_reason,
    kafka_partition,
    kafka_offset,
    raw_record,
    _source_file,
    _source_line,
    _batch_id,
    _load_id,
    _loaded_at
from rejected
