{#- Arrival metadata shared by every ODS model: which batch folder and file a record came
    from, and when this run loaded it. -#}
{% macro landed_batch_columns() %}
    _metadata.file_path as _source_file,
    regexp_extract(_metadata.file_path, 'batch=([0-9]+)', 1) as _batch_id,
    current_timestamp() as _loaded_at
{% endmacro %}

{#- Keeps only batches this ODS table has not loaded yet: a rerun adds nothing, and a batch
    that lands late (after a newer one) is still picked up. -#}
{% macro unloaded_batches_only(batch_column='_batch_id') %}
    {%- if is_incremental() %}
    where {{ batch_column }} not in (select distinct {{ batch_column }} from {{ this }})
    {%- endif %}
{% endmacro %}
