{#- The body of every ODS model: each landed line of the files this run may load (see
    landing_files_to_load), kept raw, with where it came from and which load brought it.
    A line is what lies between two newlines; a final newline ends the last line. Fields are
    parsed below ODS (landed_record), so a field no model declares yet is still here. -#}
{% macro ods_landed_lines(source_name, table_name) %}
{%- set landing = source(source_name, table_name) -%}
{%- set files = landing_files_to_load(source_name, table_name) -%}
with landed_files as (
    select
        _metadata.file_path as _source_file,
        _metadata.file_size as _file_size,
        _metadata.file_modification_time as _file_modified_at,
        case when right(value, 1) = '\n' then left(value, length(value) - 1) else value end as file_text
    from {{ landing }}
    where {{ landing_file_filter('_metadata.file_path', files) }}
),

lines as (
    select
        landed_files.*,
        line.pos + 1 as _source_line,
        line.text as _raw_line
    from landed_files
    lateral view posexplode(
        if(file_text = '', cast(array() as array<string>), split(file_text, '\n'))
    ) line as pos, text
)

select
    _raw_line,
    _source_file,
    _source_line,
    _file_size,
    _file_modified_at,
    nullif(regexp_extract(_source_file, 'batch=([0-9]+)/[^/]+$', 1), '') as _batch_id,
    cast({{ current_load_id() }} as bigint) as _load_id,
    current_timestamp() as _loaded_at
from lines
{%- endmacro %}
