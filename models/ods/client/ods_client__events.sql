{{ ods_landed_lines('client', 'events') }}
