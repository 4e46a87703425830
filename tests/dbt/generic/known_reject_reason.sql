{#- Every reject reason is one of the validation `rules`, or one derived from its source's
    declaration when the test runs: `invalid_<field>` for a declared field whose value did not
    cast (invalid_value_reason), `duplicate_<unique_key>` for a source whose accepted lines
    drop re-sent copies. A new source's fields need no edit here. -#}
{% test known_reject_reason(model, column_name, rules, source_column='source_table') %}
select {{ source_column }}, {{ column_name }}
from {{ model }}
where not (
    {{ column_name }} in ({{ _quoted(rules) }})
    {%- for landed in declared_landed_sources() %}
    {%- set reasons = [] %}
    {%- for field in landed_field_names(landed.source_name, landed.table_name) %}
        {%- do reasons.append('invalid_' ~ field.lstrip('_')) %}
    {%- endfor %}
    {%- if landed.accepted_in %}{% do reasons.append('duplicate_' ~ landed.unique_key) %}{% endif %}
    or ({{ source_column }} = '{{ landed.source_table }}' and {{ column_name }} in ({{ _quoted(reasons) }}))
    {%- endfor %}
)
{% endtest %}
