{#- Drops the tombstones (deleted keys) of every dimension state model whose delete was
    committed at the source more than `retention_days` ago. Until then a change older than the
    delete, delivered late, loses to the tombstone; after it, such a change would bring the
    key back. So the retention must exceed the longest a source can re-deliver (a connector's
    replay window). The row holding the model's watermark (`_checked_load_id`) is kept, so the
    next run does not re-read older loads. Schedule it nightly:
        dbt run-operation expire_dimension_tombstones
        dbt run-operation expire_dimension_tombstones --args '{retention_days: 60}' -#}
{% macro expire_dimension_tombstones(retention_days=none) %}
    {%- set days = retention_days if retention_days is not none
        else var('tombstone_retention_days') -%}
    {%- if days | int < 1 -%}
        {{ exceptions.raise_compiler_error("expire_dimension_tombstones: retention_days must be at least 1, got " ~ days) }}
    {%- endif -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.meta.get('tombstones') -%}
        {%- set relation = api.Relation.create(schema=node.schema, identifier=node.alias) -%}
        {%- if load_relation(relation) is none -%}{%- continue -%}{%- endif -%}
        {%- set watermark = run_query('select max(_checked_load_id) from ' ~ relation).columns[0].values()[0] -%}
        {%- set condition -%}
            _is_deleted
            and _source_committed_at < current_timestamp() - make_interval(0, 0, 0, {{ days | int }})
            and _checked_load_id < {{ watermark if watermark is not none else 0 }}
        {%- endset -%}
        {%- set expired = run_query('select count(*) from ' ~ relation ~ ' where ' ~ condition).columns[0].values()[0] -%}
        {%- if expired > 0 -%}
            {%- do run_query('delete from ' ~ relation ~ ' where ' ~ condition) -%}
        {%- endif -%}
        {{ log("tombstones " ~ relation ~ ": " ~ expired ~ " older than " ~ days ~ " days dropped", info=true) }}
    {%- endfor -%}
{% endmacro %}
