{{ config(materialized='ephemeral') }}

{#- Every ODS client event parsed from its raw line, typed, with the first rule it breaks
    (null when it is valid). Shared by the event detail (valid rows) and the quarantine (the
    rest), so the two can never disagree about what is valid. The SQL is a macro
    (macros/typed_rows/typed_client__events.sql): dwd_landing__typed_rows caches this run's
    rows of it for those readers by rendering the same macro. -#}
{{ typed_client__events() }}
