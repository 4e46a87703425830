{#- The key columns a changelog source declares in `meta.changelog_key`: one field or a list
    of them (a composite primary key: who follows whom). Each must be a declared column of the
    source and none a field of the change envelope; anything else stops the compile naming the
    source, the key and the fix. -#}
{% macro changelog_key_columns(declaration, envelope_fields) %}
    {%- set name = declaration.source_name ~ "." ~ declaration.name -%}
    {%- set declared = declaration.meta.get('changelog_key') -%}
    {%- set fix = " (docs/adding-a-source.md: the changelog key is the source table's primary key, one declared column or a list of them, e.g. changelog_key: [follower_id, followee_id])" -%}
    {%- if not declared -%}
        {{ exceptions.raise_compiler_error("changelog source " ~ name ~ " declares no meta.changelog_key (the field naming the changed row)" ~ fix) }}
    {%- endif -%}
    {%- set keys = [declared] if declared is string else declared -%}
    {%- if keys is string or keys is mapping or keys is not iterable or keys | reject('string') | list -%}
        {{ exceptions.raise_compiler_error("changelog source " ~ name ~ ": meta.changelog_key " ~ declared ~ " is neither a column name nor a list of them" ~ fix) }}
    {%- endif -%}
    {%- for key in keys -%}
        {%- if key in envelope_fields -%}
            {{ exceptions.raise_compiler_error("changelog source " ~ name ~ ": meta.changelog_key " ~ declared ~ " names the change envelope's " ~ key ~ ", not the changed row's key" ~ fix) }}
        {%- elif key not in declaration.columns -%}
            {{ exceptions.raise_compiler_error("changelog source " ~ name ~ ": meta.changelog_key " ~ declared ~ " names " ~ key ~ ", which is not a declared column of the source: declare it under its columns (with its meta.type)" ~ fix) }}
        {%- endif -%}
    {%- endfor -%}
    {%- if keys | unique | list | length != keys | length -%}
        {{ exceptions.raise_compiler_error("changelog source " ~ name ~ ": meta.changelog_key " ~ declared ~ " names a column twice" ~ fix) }}
    {%- endif -%}
    {{ return(keys) }}
{% endmacro %}
