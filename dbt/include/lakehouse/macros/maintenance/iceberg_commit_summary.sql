{#- The cheap read every run makes, in one statement (dbt/include/lakehouse/java/lakehouse/TableState.java):
    the table's properties (the current snapshot id and the checkpoint the last full health
    read left, see iceberg_maintenance_checkpoint) and its snapshot log (in the table's
    metadata file; no manifest or data file is opened), a few numbers per snapshot, summed
    up by the adapter (maintenance.commit_summary): the current snapshot's counters,
    snapshot counts for expiry and an upper bound of the data files any one partition gained
    since the checkpoint. `expire_before`: a UTC datetime; snapshots older than it are
    counted apart. `state`: the table's read when the caller made it already
    (iceberg_table_states), none to read it here. -#}
{% macro iceberg_commit_summary(relation, expire_before, state=none) %}
    {%- if state is none -%}
        {%- set read = _maintenance_execute("select reflect('lakehouse.TableState', 'summary', '" ~ _iceberg_table_name(relation) ~ "') from values (1)") -%}
        {%- if read.error -%}{{ return({'error': read.error}) }}{%- endif -%}
        {%- set state = fromjson(read.table.rows[0][0]) -%}
    {%- endif -%}
    {%- if state.error -%}{{ return({'error': state.error}) }}{%- endif -%}
    {%- set cutoff_ms = ((expire_before - modules.datetime.datetime(1970, 1, 1)).total_seconds() * 1000) | int -%}
    {{ return(adapter.maintenance_summary(state, cutoff_ms)) }}
{% endmacro %}

{#- The cheap read of each of `relations` in one statement (TableState.summaries), for a
    caller that maintains many tables: {relation as a string: its state}. A table the read
    failed for maps to {error}; a failure of the whole statement gives each table that error. -#}
{% macro iceberg_table_states(relations) %}
    {%- if not relations -%}{{ return({}) }}{%- endif -%}
    {%- set names = [] -%}
    {%- for relation in relations -%}{%- do names.append(_iceberg_table_name(relation)) -%}{%- endfor -%}
    {%- set read = _maintenance_execute("select reflect('lakehouse.TableState', 'summaries', '" ~ names | join(',') ~ "') from values (1)") -%}
    {%- set states = {} if read.error else fromjson(read.table.rows[0][0]) -%}
    {%- set by_relation = {} -%}
    {%- for relation in relations -%}
        {%- do by_relation.update({relation | string: states.get(names[loop.index0]) or {'error': read.error or 'not read'}}) -%}
    {%- endfor -%}
    {{ return(by_relation) }}
{% endmacro %}
