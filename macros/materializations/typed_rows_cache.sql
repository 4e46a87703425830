{#- The materialization of dwd_landing__typed_rows (macros/typed_rows/typed_rows.sql): no
    table, only Spark's cache. Each typed model the node refs is inlined by dbt as a CTE
    (`model.extra_ctes`); its SQL, filtered to this run's load, becomes a global temporary
    view, cached at once. Spark's cache never matches a plan holding a CTE, so a typed model
    whose own SQL has one (or that reads another ephemeral model) is not cached: a warning
    names it and its readers parse the lines themselves. -#}
{% materialization typed_rows_cache, adapter='spark' -%}
  {{ run_hooks(pre_hooks) }}{#- the run's branch on this connection (write-audit-publish) -#}
  {%- set planned = [] -%}
  {%- if run_takes_lock() -%}
    {%- for cte in model.extra_ctes -%}
      {%- set name = cte.id.split('.')[-1] -%}
      {%- set typed_sql = cte.sql.split(' as (', 1)[1].rsplit(')', 1)[0] -%}
      {%- if modules.re.search('(?is)^\s*((--[^\n]*\n|/\*.*?\*/)\s*)*with\s', typed_sql)
            or '__dbt__cte__' in typed_sql -%}
        {{ log("warning: " ~ name ~ " is not cached for this run's readers: its SQL has a CTE,"
            ~ " which Spark's cache never matches (write subqueries instead)", info=true) }}
      {%- else -%}
        {%- do planned.append([name, typed_sql]) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  {%- if planned -%}
    {%- set load_id = current_load_id() -%}
    {%- for name, typed_sql in planned -%}
      {%- set cache = 'global_temp.' ~ this.schema ~ '__' ~ name ~ '__this_run' -%}
      {%- call statement('view_' ~ name) -%}
        create or replace global temporary view {{ cache.split('.')[1] }} as
        select * from ({{ typed_sql }}) where _load_id >= {{ load_id }}
      {%- endcall -%}
      {%- call statement('main' if loop.last else 'cache_' ~ name) -%}
        cache table {{ cache }}
      {%- endcall -%}
      {%- do adapter.note_cached_rows('__dbt__cte__' ~ name, cache, load_id) -%}
    {%- endfor -%}
  {%- else -%}
    {%- call statement('main') -%}select 1{%- endcall -%}
  {%- endif -%}
  {{ return({'relations': []}) }}
{%- endmaterialization %}
