{#- The first rule a changelog record breaks, or null when it can be applied, by the role of
    its operation: every change needs a known operation, a valid key and log position and a
    valid arrival identity; only the changes that carry the new state (+I, +U) need their
    values. A delete or before-image whose other fields do not cast is still applied: the
    user is deleted whatever their old `level` held.
    A change without every part of its key (a composite key's too) is a `missing_key`.
    Expects the typed columns `op`, the key columns (one name or a list), `source_lsn`,
    `is_unparseable`, `_is_redelivery`, and the reasons `invalid_arrival_reason` and
    `invalid_value_reason`. -#}
{% macro changelog_reject_reason(key_columns) %}
    {%- set keys = [key_columns] if key_columns is string else key_columns -%}
    case
        when is_unparseable then 'unparseable_record'
        when _is_redelivery then 'redelivered_record'
        when coalesce(op, '') not in ('+I', '-U', '+U', '-D') then 'unknown_change_op'
        when {{ keys | join(' is null or ') }} is null then 'missing_key'
        when source_lsn is null then 'invalid_source_lsn'
        when invalid_arrival_reason is not null then invalid_arrival_reason
        when op in ('+I', '+U') then invalid_value_reason
    end
{% endmacro %}
