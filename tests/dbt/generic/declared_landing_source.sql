{#- Every value is the `source_table` of a declared landing source (declared_landed_sources):
    derived from the sources' yml when the test runs, so a new source needs no edit here. -#}
{% test declared_landing_source(model, column_name) %}
select {{ column_name }}
from {{ model }}
where {{ column_name }} is null or {{ column_name }} not in ({{ landed_source_tables() }})
{% endtest %}
