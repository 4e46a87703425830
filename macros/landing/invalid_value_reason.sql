{#- 'invalid_<column>' for the first landed value that is present but does not cast to its
    type, or null. A malformed non-key value must reject the record with a reason, never
    become a silent null. `casts`: [[field, type], ...]; `record`: the parsed landed record
    (landed_record) holding the fields. -#}
{% macro invalid_value_reason(casts, record='record') %}
    case
        {%- for column, type in casts %}
            when
                nullif(trim({{ record }}.{{ column }}), '') is not null
                and try_cast({{ record }}.{{ column }} as {{ type }}) is null
                then 'invalid_{{ column.lstrip("_") }}'
        {%- endfor %}
    end
{%- endmacro %}
