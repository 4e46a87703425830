{#- Override: dbt-spark sees an Iceberg table as Hive on the session catalog (dbt-adapters #489). -#}
{#- dbt-spark 1.11's relation listing, changed: tell dbt which tables are Iceberg.

    With Iceberg's SparkSessionCatalog, `show table extended` answers through Spark's v1 Hive
    path and reports an Iceberg table as `Provider: hive` (its `Table Properties` hold
    `table_type=ICEBERG`). dbt-spark reads the format from `Provider: ...`, so every Iceberg
    table looked like a plain Hive table: a snapshot's second run refused it ("is in another
    format than 'delta' or 'iceberg' or 'hudi'", dbt-adapters #489) and a table model's full
    refresh dropped it instead of replacing it. Here the provider line of such a table says
    iceberg; the rows are otherwise Spark's own (dbt-spark reads 4 columns per row).

    Spark also lists the session's temporary views in every schema (no namespace). dbt-spark
    leaves one behind per incremental run (`<model>__dbt_tmp`); in a process that runs more
    than one dbt command (dbtRunner, `lakehouse dbt`, tests) `docs generate` then failed on a
    catalog entry without a schema. They belong to the session, not the schema: skipped.

    Over a REST catalog (the `s3` and `cluster` targets) the built-in catalog does not know
    the Iceberg tables: they are added from the service's listing, and for `docs generate`
    with the size and row count of main's snapshot (what `Statistics:` says for a Hive
    table). -#}
{% macro lakehouse__list_relations_without_caching(relation) %}
    {%- set tables = dbt.spark__list_relations_without_caching(relation) -%}
    {%- set rows = [] -%}
    {%- for row in tables if (row[2] | string | lower) != 'true' -%}
        {%- set information = row[3] -%}
        {%- if 'table_type=ICEBERG' in information -%}
            {%- set information = information | replace('Provider: hive', 'Provider: iceberg') -%}
        {%- endif -%}
        {%- do rows.append([row[0], row[1], row[2], information]) -%}
    {%- endfor -%}
    {%- if session_setting('spark.sql.catalog.spark_catalog') == 'lakehouse.RestSessionCatalog' -%}
        {%- set listed = rows | map(attribute=1) | list -%}
        {%- call statement('service_tables', fetch_result=True) -%}
            select reflect('lakehouse.RestSessionCatalog', 'serviceTables', '{{ relation.schema }}')
            from values (1)
        {%- endcall -%}
        {%- for name in load_result('service_tables').table[0][0].split('\n') if name and name not in listed -%}
            {%- set information = 'Catalog: spark_catalog\nDatabase: ' ~ relation.schema ~ '\nTable: ' ~ name ~ '\nType: MANAGED\nProvider: iceberg\n' -%}
            {%- if flags.WHICH == 'generate' -%}  {#- docs: the size Hive's listing would print, from main's snapshot -#}
                {%- set table = relation.schema ~ '.' ~ name -%}
                {%- set stats = run_query("select summary['total-files-size'], summary['total-records'] from " ~ table
                    ~ ".snapshots where snapshot_id = (select snapshot_id from " ~ table ~ ".refs where name = 'main')").rows -%}
                {%- if stats -%}
                    {%- set information = information ~ 'Statistics: ' ~ stats[0][0] ~ ' bytes, ' ~ stats[0][1] ~ ' rows\n' -%}
                {%- endif -%}
            {%- endif -%}
            {%- do rows.append([relation.schema, name, false, information]) -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(rows) }}
{% endmacro %}
