{#- Override: dbt-spark binds each seed cell as '<value>', so an empty cell is 'None' (dbt-adapters #487). -#}
{#- dbt-spark's seed load, rewritten. dbt-spark passes each cell as a binding, and its
    `session` method formats every binding as '<value>': an empty cell became the string
    'None' instead of null (dbt-adapters #487), a quote in a cell broke the statement and
    large integers went through a float. Here each cell is written as a SQL literal: empty
    cells null, numbers as written, text escaped, dates and times as text cast to the column's
    type. The same SQL runs on every target. -#}
{% macro lakehouse__load_csv_rows(model, agate_table) %}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set types = [] -%}
    {%- for name in agate_table.column_names -%}
        {%- do types.append(column_override.get(name, adapter.convert_type(agate_table, loop.index0))) -%}
    {%- endfor -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
        {%- set sql -%}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                ({%- for value in row -%}
                    cast({{ _seed_literal(value) }} as {{ types[loop.index0] }}){{ ', ' if not loop.last }}
                {%- endfor -%}){{ ',' if not loop.last }}
            {% endfor %}
        {%- endset -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- if loop.first -%}{%- do statements.append(sql) -%}{%- endif -%}
    {%- endfor -%}
    {#- the SQL dbt renders into the compiled files -#}
    {{ return(statements[0] if statements else '') }}
{% endmacro %}

{#- One seed cell (as agate parsed it) as a Spark SQL literal. -#}
{% macro _seed_literal(value) %}
    {%- if value is none -%}{{ return('null') }}
    {%- elif value is boolean -%}{{ return(value | string | lower) }}
    {%- elif value is number -%}{{ return(value | string) }}
    {%- endif -%}
    {%- set text = value.isoformat(' ') if value is not string and value.isoformat is defined and value.hour is defined
        else (value.isoformat() if value is not string and value.isoformat is defined else value | string) -%}
    {{ return("'" ~ (text | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") }}
{% endmacro %}

{#- Override: dbt-spark drops and recreates a seed's table on every load, which would change
    main in a write-audit-publish run before its tests ran. A seed's Iceberg table whose
    columns are unchanged is emptied on the run's branch instead (wap_session, the seed's
    pre-hook, prepared it) and the rows are inserted there; main sees them when the run
    publishes. Without a branch, on a full refresh, or when the CSV's columns or their types changed, the
    table is replaced as dbt-spark does. -#}
{% macro lakehouse__reset_csv_table(model, full_refresh, old_relation, agate_table) %}
    {%- set branch = wap_active_branch() -%}
    {%- if branch and not full_refresh and model.config.get('file_format') == 'iceberg'
          and _seed_columns_unchanged(old_relation, agate_table) -%}
        {%- set sql = 'delete from ' ~ old_relation.render() -%}
        {%- call statement('_') -%}{{ sql }}{%- endcall -%}
        {{ return(sql) }}
    {%- endif -%}
    {{ return(spark__reset_csv_table(model, full_refresh, old_relation, agate_table)) }}
{% endmacro %}

{#- Whether the seed's table has the CSV's columns, in order and with the types the load casts
    to (names and types compared in lower case): else the table is replaced. -#}
{% macro _seed_columns_unchanged(relation, agate_table) %}
    {%- set overrides = model['config'].get('column_types', {}) -%}
    {%- set wanted = [] -%}
    {%- for name in agate_table.column_names -%}
        {%- do wanted.append((name | string | lower, (overrides.get(name) or adapter.convert_type(agate_table, loop.index0)) | lower)) -%}
    {%- endfor -%}
    {%- set existing = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) -%}
        {%- do existing.append((column.name | lower, column.data_type | lower)) -%}
    {%- endfor -%}
    {{ return(existing == wanted) }}
{% endmacro %}
