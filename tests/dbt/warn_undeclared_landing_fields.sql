{{ config(severity='warn') }}

-- Fields landing carries that no source declares: declare them to surface them downstream.
select
    source_table,
    field_name,
    line_count
from {{ ref('ods_landing__undeclared_fields') }}
