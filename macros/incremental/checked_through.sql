{#- A reader whose rows are only part of what it reads cannot take its watermark from its rows
    alone. The quarantine writes the rejects among every landed line: a source with no reject
    in its last loads (one whose lines are all valid) would be read again from its last
    reject on, in every run, a cost that grows with the history. So such a reader also
    records, per landed source, the load id it has read through (`lakehouse.checked-through`
    in its snapshot summary: `appdb_users=12,client_events=12`), and reads each source from
    the higher of the two. Under write-audit-publish the record is on the run's branch,
    published with the rows it describes; a red run's never reaches main. A record that is
    missing (a first build, a run that failed before its post-hook, its snapshot expired)
    only makes the next run read more, never less. -#}

{% macro checked_through_key() %}{{ return('lakehouse.checked-through') }}{% endmacro %}

{#- {source: load id} this model has recorded: one read; the model keeps it in a variable and
    passes each source's load to loaded_since_last_run(at_least=...) -#}
{% macro checked_through() %}
    {%- set found = {} -%}
    {%- if execute and is_incremental() and model.resource_type == 'model' -%}
        {%- set stamped = run_query("select reflect('lakehouse.TableState', 'stamped', '" ~ this ~ "', '"
            ~ checked_through_key() ~ "', '" ~ (wap_active_branch() or 'main') ~ "') from values (1)").rows[0][0] -%}
        {%- for pair in stamped.split('\t')[0].split(',') if '=' in pair -%}
            {%- set name, load_id = pair.split('=') -%}
            {%- do found.update({name: load_id | int}) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(found) }}
{% endmacro %}

{#- Post-hook of such a reader (the quarantine's config): it has read every declared landed
    source through this run's load. Only a run holding the run lock has a load id, and every
    later load's is higher; any other run records nothing. -#}
{% macro record_checked_through() %}
    {%- if not execute or model.resource_type != 'model' or not run_takes_lock() -%}{{ return('') }}{%- endif -%}
    {%- set load_id = current_load_id() -%}
    {%- set pairs = [] -%}
    {%- for landed in declared_landed_sources() | sort(attribute='source_table') -%}
        {%- do pairs.append(landed.source_table ~ '=' ~ load_id) -%}
    {%- endfor -%}
    {%- do run_query("select reflect('lakehouse.SnapshotSummary', 'stamp', '" ~ this ~ "', '"
        ~ checked_through_key() ~ "', '" ~ pairs | join(',') ~ "', '" ~ (wap_active_branch() or 'main') ~ "') from values (1)") -%}
    {{ return('') }}
{% endmacro %}
