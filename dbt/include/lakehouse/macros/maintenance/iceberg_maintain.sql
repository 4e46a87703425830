{#- Decide, act, record: one line in dbt's log and one row in the maintenance log.
    The three parts are separate macros so that a caller can decide now and act later
    (e.g. after a write-audit-publish run publishes). `on_error`: warn | fail. `log_rows`: a
    list to append the maintenance-log row to instead of writing it now (a caller that
    maintains many tables writes their rows in one commit: iceberg_maintenance_log_flush).
    `state`: the table's cheap read, when the caller read many tables at once. `retention`:
    the table's retention rule, applied when `nightly`; `load_ledger`: the table is a load
    ledger (iceberg_maintenance_decision). -#}
{% macro iceberg_maintain(relation, policy, tblproperties={}, nightly=false, on_error='warn', trigger='operation', log_rows=none, state=none, retention=none, load_ledger=false) %}
    {%- if on_error not in ['warn', 'fail'] -%}
        {{ exceptions.raise_compiler_error("maintenance of " ~ relation ~ ": on_maintenance_error must be warn or fail, got '" ~ on_error ~ "'") }}
    {%- endif -%}
    {%- set decision = iceberg_maintenance_decision(relation, policy, tblproperties, nightly, state=state, retention=retention, load_ledger=load_ledger) -%}
    {%- set outcome = iceberg_maintenance_act(decision) -%}
    {%- do iceberg_maintenance_record(decision, outcome, trigger, log_rows) -%}
    {%- if outcome.errors and on_error == 'fail' -%}
        {{ exceptions.raise_database_error("maintenance of " ~ relation ~ " failed (on_maintenance_error: fail): " ~ (outcome.errors | join('; '))) }}
    {%- elif outcome.errors -%}
        {#- a post-hook (or the publish's deferred maintenance) runs after the model's data
            committed; an operation goes on with its other tables -#}
        {%- set consequence = "its data committed; the model succeeded" if trigger in ['post-hook', 'post-publish']
            else "the operation goes on" -%}
        {%- do exceptions.warn("maintenance of " ~ relation ~ " failed (on_maintenance_error: warn; " ~ consequence ~ "): " ~ (outcome.errors | join('; '))) -%}
    {%- endif -%}
    {{ return({'decision': decision, 'outcome': outcome}) }}
{% endmacro %}
