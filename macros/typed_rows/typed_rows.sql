{#- Each landed line parsed and typed once per run. A landing source's typed model
    (`dwd_<source>__<table>_checked`) is ephemeral: inlined into each model that reads it, so
    it always types with the invocation's own rules and vars. Its readers are several (the
    detail or the dimension state takes the valid lines, the quarantine the rest), and each
    would parse the new load again. So in a run that loads (it holds the run lock), the model
    dwd_landing__typed_rows caches, before any reader runs, each typed model's rows of this
    run's load (`_load_id` at or above the run's load id: ODS committed them earlier in the
    run) in Spark's cache (adapter.cache_rows: on a Thrift server a global temporary view,
    which every connection sees), and the readers read
        the cache  union all  the typed model below this run's load id
    which is every typed row, split by load id, under each reader's own load filter (a reader
    behind the others reads its older loads through the typed model, ODS's file pruning
    skipping the rest). The caches are dropped first thing at on-run-end. -#}

{#- What a reader of a typed model reads: `typed` (its ref) as is, or, when this run cached
    its load's rows, the cache and the typed model's rows below that load. `after`: the
    reader's watermark (it reads loads above it: load_watermark), when it has one. A reader
    whose watermark is just below the cached load, or any reader when ODS held no earlier
    load (a first build), reads the cache alone (CachedRows.covers), without the typed
    model's SQL, which Spark would analyze again (about ten seconds for the quarantine) only
    to find no file below the load. -#}
{% macro typed_rows(typed, after=none) %}
    {%- if not execute -%}
        {%- do ref('dwd_landing__typed_rows') -%}{#- a reader runs after the caches are made -#}
        {{ return(typed) }}
    {%- endif -%}
    {%- if model.resource_type == 'unit_test' -%}{{ return(typed) }}{%- endif -%}
    {%- set cached = adapter.cached_rows(typed) -%}
    {%- if cached is none -%}{{ return(typed) }}{%- endif -%}
    {%- if cached.covers(after) -%}{{ return(cached.relation) }}{%- endif -%}
    {{- return('(select * from ' ~ cached.relation ~ ' union all select * from ' ~ typed
        ~ ' where _load_id < ' ~ cached.load_id ~ ')') -}}
{% endmacro %}

{#- on-run-end: every cache this run made, dropped (and so uncached) -#}
{% macro drop_typed_rows_caches() %}
    {%- if not execute -%}{{ return('') }}{%- endif -%}
    {%- for cached in adapter.cached_rows_of_run() -%}
        {%- do run_query('drop view if exists ' ~ cached.relation) -%}
    {%- endfor -%}
    {{ return('') }}
{% endmacro %}
