{{ ods_landed_lines('appdb', 'video_changes') }}
