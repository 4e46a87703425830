{#- Completeness watermarks: the data time up to which a table is complete, recorded by its
    writer in the table's snapshot summary (`lakehouse.complete-through`) after each run that
    moves it, and read by downstream jobs instead of guessing. See docs/completeness.md.

    A model opts in with the config `completeness`:
      {'arrival_columns': ['ingested_at']}  complete through the newest arrival among its
                                            rows, minus var('completeness_allowance_hours')
                                            (an event arriving later than that is late)
      {'upstreams': 'refs'}                 complete through the oldest watermark of the
                                            models it reads that record one (it recomputes
                                            what they deliver); none of them: not complete
      {'upstreams': ['dwd_client__events']} the same over the named models, each of which it
                                            must read (checked: a folder default cannot
                                            stamp a model with a table it does not read)
    Several columns or upstreams: the minimum over them. -#}

{#- Post-hook: stamp this model's watermark into its snapshot summary when it moved. Spark 3.5
    SQL cannot set a summary property, so a Java helper (SnapshotSummary.stampLowest) commits
    an empty append carrying it;
    `from values (1)` makes Spark evaluate the call on the driver (dbt/include/lakehouse/java/lakehouse/). -#}
{% macro record_completeness() %}
    {%- set spec = config.get('completeness') -%}
    {%- if not execute or not spec or model.resource_type != 'model' -%}{{ return('') }}{%- endif -%}
    {%- set known = [] -%}
    {%- for column in spec.get('arrival_columns', []) -%}
        {%- set newest = run_query('select cast(max(' ~ column ~ ') - make_interval(0, 0, 0, 0, '
            ~ completeness_allowance_hours() ~ ') as string) from ' ~ this).columns[0].values()[0] -%}
        {%- do known.append(newest) -%}
    {%- endfor -%}
    {%- set upstreams = [] -%}
    {%- for upstream in completeness_upstreams(spec.get('upstreams', [])) -%}
        {%- do upstreams.append(ref(upstream) | string) -%}
    {%- endfor -%}
    {#- one call reads the upstreams' stamps, takes the lowest of them and the arrivals, and
        stamps it only when the watermark moved; a write-audit-publish run stamps its branch:
        published with the data it describes -#}
    {%- set stamped = '' -%}
    {%- if (known or upstreams) and none not in known -%}
        {%- set stamped = run_query("select reflect('lakehouse.SnapshotSummary', 'stampLowest', '" ~ this ~ "', '"
            ~ completeness_key() ~ "', '" ~ known | join('|') ~ "', '" ~ upstreams | join(',') ~ "', '"
            ~ (wap_active_branch() or 'main') ~ "') from values (1)").rows[0][0] -%}
    {%- endif -%}
    {%- if not stamped -%}
        {{ log(this ~ ": not complete through any time yet (a source has no watermark)", info=true) }}
        {{ return('') }}
    {%- endif -%}
    {%- set through, outcome = stamped.split('\t') -%}
    {%- if outcome == 'unchanged' -%}{{ return('') }}{%- endif -%}
    {{ log(this ~ ": complete through " ~ through, info=true) }}
    {{ return('') }}
{% endmacro %}

{#- The models whose watermarks bound this model's: 'refs' = the models it reads that record
    one; a list = those names, each checked to be a model it reads. -#}
{% macro completeness_upstreams(upstreams) %}
    {%- set parents = {} -%}
    {%- for unique_id in model.depends_on.nodes if unique_id in graph.nodes -%}
        {%- do parents.update({graph.nodes[unique_id].name: graph.nodes[unique_id]}) -%}
    {%- endfor -%}
    {%- if upstreams == 'refs' -%}
        {{ return(parents.values() | selectattr('config.completeness') | map(attribute='name') | sort) }}
    {%- endif -%}
    {%- for name in upstreams if name not in parents -%}
        {{ exceptions.raise_compiler_error(model.name ~ ": completeness upstream '" ~ name
            ~ "' is not a model it reads (it reads " ~ (parents.keys() | sort | join(', ')) ~ "); use {upstreams: refs}"
            ~ " or name the models it reads") }}
    {%- endfor -%}
    {{ return(upstreams) }}
{% endmacro %}

{% macro completeness_key() %}{{ return('lakehouse.complete-through') }}{% endmacro %}

{#- The watermark of `relation`: the newest one stamped on the lineage readers of this
    session see ('YYYY-MM-DD HH:MM:SS[.fff]' string), or none (also when the table does not
    exist yet). -#}
{% macro completeness_of(relation) %}
    {%- set found = completeness_stamp(relation) -%}
    {{ return(found.through if found else none) }}
{% endmacro %}

{#- {through, snapshot_id, committed_at} of the newest stamped snapshot on the lineage of the
    ref this session reads (a write-audit-publish run's branch when the table has it, else
    main; a rolled-back or unpublished snapshot does not count), or none. -#}
{% macro completeness_stamp(relation) %}
    {%- if not execute or load_relation(relation) is none -%}{{ return(none) }}{%- endif -%}
    {#- one statement (dbt/include/lakehouse/java/lakehouse/TableState.java), not a read of refs and snapshots -#}
    {%- set found = run_query("select reflect('lakehouse.TableState', 'stamped', '" ~ relation ~ "', '"
        ~ completeness_key() ~ "', '" ~ (wap_active_branch() or 'main') ~ "') from values (1)").rows[0][0] -%}
    {%- if not found -%}{{ return(none) }}{%- endif -%}
    {%- set through, snapshot_id, committed_at = found.split('\t') -%}
    {{ return({'through': through, 'snapshot_id': snapshot_id | int, 'committed_at': committed_at}) }}
{% endmacro %}

{% macro completeness_allowance_hours() %}
    {%- set allowance = var('completeness_allowance_hours') -%}
    {{- return((var('max_event_lateness_days') * 24 if allowance is none else allowance) | int) -}}
{% endmacro %}

{#- `dbt run-operation completeness`: the watermark of every model that records one. -#}
{% macro completeness() %}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.get('completeness') -%}
        {%- set relation = api.Relation.create(schema=node.schema, identifier=node.alias, type='table') -%}
        {%- if load_relation(relation) is none -%}
            {{ print(relation ~ "  not built yet") }}
            {%- continue -%}
        {%- endif -%}
        {%- set found = completeness_stamp(relation) -%}
        {%- if found -%}
            {{ print(relation ~ "  complete through " ~ found.through ~ "  (snapshot " ~ found.snapshot_id ~ ", " ~ found.committed_at ~ ")") }}
        {%- else -%}
            {{ print(relation ~ "  no watermark yet") }}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}
