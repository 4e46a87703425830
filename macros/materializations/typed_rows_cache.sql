{#- The materialization of dwd_landing__typed_rows (macros/typed_rows/typed_rows.sql): no
    table, only Spark's cache. For each declared landing source, the SQL of its typed model
    (typed_landing_rows: the macro that model renders), filtered to this run's load, is cached
    at once (adapter.cache_rows). Spark's cache never matches a plan holding a CTE, so a typed
    SQL that has one is not cached: a warning names it and its readers parse the lines
    themselves, as they do for a source whose typed model is not the one call of a known
    macro (typed_landing_rows). -#}
{% materialization typed_rows_cache, adapter='spark' -%}
  {{ run_hooks(pre_hooks) }}{#- the run's branch on this connection (write-audit-publish) -#}
  {%- set planned = [] -%}
  {%- if run_takes_lock() -%}
    {%- for source in declared_landed_sources() -%}
      {%- set typed_sql = typed_landing_rows(source) -%}
      {%- if typed_sql is none -%}
        {{ log("warning: " ~ source.typed ~ " is not cached for this run's readers: its code is not the one call"
            ~ " typed_changelog(...) or typed_" ~ source.source_name ~ "__" ~ source.table_name
            ~ "() that the cache renders (docs/adding-a-source.md)", info=true) }}
      {%- elif modules.re.search('(?is)^\s*((--[^\n]*\n|/\*.*?\*/)\s*)*with\s', typed_sql) -%}
        {{ log("warning: " ~ source.typed ~ " is not cached for this run's readers: its SQL has a CTE,"
            ~ " which Spark's cache never matches (write subqueries instead)", info=true) }}
      {%- else -%}
        {%- do planned.append([source.typed, typed_sql, ref(source.ods)]) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  {%- if planned -%}
    {%- set load_id = current_load_id() -%}
    {#- each ODS table's lowest load, all in one statement: ODS holding no earlier load (a
        first build) means the cache holds every row. Iceberg answers each min from its
        files' statistics (aggregate push-down: no data file read; ODS is append-only, so no
        delete file turns it off) -#}
    {%- set lowest = [] -%}
    {%- for name, typed_sql, ods in planned -%}
      {%- do lowest.append('(select min(_load_id) from ' ~ ods ~ ')') -%}
    {%- endfor -%}
    {%- set earliest = run_query('select ' ~ lowest | join(', ')).rows[0] -%}
    {%- for name, typed_sql, ods in planned -%}
      {%- set cache = adapter.cache_rows(this.schema ~ '__' ~ name ~ '__this_run',
          'select * from (' ~ typed_sql ~ ') where _load_id >= ' ~ load_id) -%}
      {%- do adapter.note_cached_rows('__dbt__cte__' ~ name, cache, load_id, earliest[loop.index0]) -%}
    {%- endfor -%}
    {%- do store_result('main', response='OK') -%}
  {%- else -%}
    {%- call statement('main') -%}select 1{%- endcall -%}
  {%- endif -%}
  {{ return({'relations': []}) }}
{%- endmaterialization %}
