{#- 'invalid_<column>' for the first landed value that is present but does not cast to its
    type, or null. A malformed non-key value must reject the record with a reason, never
    become a silent null. `casts`: [[raw column, type], ...]. -#}
{% macro invalid_value_reason(casts) %}
    case
        {%- for column, type in casts %}
            when nullif(trim({{ column }}), '') is not null and try_cast({{ column }} as {{ type }}) is null
                then 'invalid_{{ column.lstrip("_") }}'
        {%- endfor %}
    end
{%- endmacro %}
