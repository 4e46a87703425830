{{ config(materialized='typed_rows_cache') }}

{#- No table: in a run that loads, every landing source's typed model, filtered to this run's
    load, parsed and typed once into Spark's cache for the run's readers (the detail, the
    dimension states, the quarantine). macros/typed_rows/typed_rows.sql. It renders each
    typed model's SQL itself (typed_landing_rows), which reads the source's ODS model. -#}
{%- for name in landed_source_models() if name.endswith('_checked') or name.startswith('ods_') %}
-- depends_on: {{ ref(name) }}
{%- endfor %}
select 1 as cached
