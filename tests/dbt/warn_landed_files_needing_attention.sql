{{ config(severity='warn', tags=['nightly']) }}

{#- Landed files the load ledger (ods_landing__files) cannot call healthy: a batch abandoned
    by its writer, a file changed or removed after ODS loaded it (never reloaded). dbt's
    warning says only how many; each file is logged here with its source, path and state,
    so the warning says which file to look at and why. The ledger lists every landed file
    and reads every ODS file name: tagged `nightly`, it runs in the nightly reconciliation
    and in `dbt test`, not in every scheduled build (selectors.yml). -#}
{%- set attention = {
    'abandoned': "its batch has no _SUCCESS marker after var landing_abandoned_after_hours: did its writer die?",
    'changed_after_load': "its size or time differs from what ODS loaded; ODS keeps the loaded lines and never reloads it",
    'gone_after_load': "ODS loaded it; it is no longer in the landing zone (retention?)",
} -%}
{%- set query -%}
select source_table, file_path, file_state
from {{ ref('ods_landing__files') }}
where coalesce(file_state, '') not in ('loaded', 'waiting_for_marker', 'not_loaded_yet')
{%- endset -%}

{#- only when the test runs: `dbt compile` and `docs generate` render it too, maybe before
    the ledger exists -#}
{%- if execute and flags.WHICH in ['build', 'test', 'retry'] -%}
    {%- do wap_session() -%}  {#- a Thrift connection reads the run's branch, as the test does -#}
    {%- for row in run_query(query).rows -%}
        {%- do log('landing ledger: ' ~ row[0] ~ ' file ' ~ row[1] ~ ' is ' ~ row[2] ~ ': ' ~ attention.get(row[2], 'not a ledger state (a bug in ods_landing__files)'), info=true) -%}
    {%- endfor -%}
{%- endif %}

{{ query }}
