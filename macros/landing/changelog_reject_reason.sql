{#- The first rule a changelog record breaks, or null when it can be applied.
    Expects the typed columns `op`, `<key_column>` and `source_lsn`, and `_corrupt_record`. -#}
{% macro changelog_reject_reason(key_column) %}
    case
        when _corrupt_record is not null then 'unparseable_record'
        when coalesce(op, '') not in ('+I', '-U', '+U', '-D') then 'unknown_change_op'
        when {{ key_column }} is null then 'missing_key'
        when source_lsn is null then 'invalid_source_lsn'
    end
{% endmacro %}
