{#- The graph node and the table of model `name`, for the schema migrations; fails clearly when
    the model or its table does not exist. -#}
{% macro _model_table(name) %}
    {%- set nodes = graph.nodes.values() | selectattr('resource_type', 'equalto', 'model')
        | selectattr('name', 'equalto', name) | list -%}
    {%- if not nodes -%}
        {{ exceptions.raise_compiler_error("no model named " ~ name) }}
    {%- endif -%}
    {%- set node = nodes[0] -%}
    {%- set relation = api.Relation.create(schema=node.schema, identifier=node.alias, type='table') -%}
    {%- if load_relation(relation) is none -%}
        {{ exceptions.raise_compiler_error(relation ~ " (model " ~ name ~ ") does not exist") }}
    {%- endif -%}
    {{ return({'node': node, 'relation': relation}) }}
{% endmacro %}

{#- The column's current type in the table, or a clear error when it has no such column. -#}
{% macro _column_type(relation, column) %}
    {%- for col in adapter.get_columns_in_relation(relation) -%}
        {%- if col.name | lower == column | lower -%}{{ return(col.data_type) }}{%- endif -%}
    {%- endfor -%}
    {{ exceptions.raise_compiler_error(relation ~ " has no column " ~ column) }}
{% endmacro %}
