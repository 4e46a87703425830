{{ ods_landed_lines('appdb', 'user_changes') }}
