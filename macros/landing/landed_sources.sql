{#- The landing sources the project declares, and the models each one needs.

    A landing source is a source table with `meta.landing_format: text` (its files' lines go
    to ODS); its listing is the `binaryFile` source of the same `landing_folder`. Its models
    are named after it: `ods_<source>__<table>` keeps its lines raw, and
    `dwd_<source>__<table>_checked` types each line with the first rule it breaks
    (`reject_reason`). Its accepted lines are the typed model's valid ones, unless
    `meta.accepted_in` names a table holding them one per line (an event detail that drops
    re-sent copies, with `meta.unique_key`); those copies go to the quarantine too.

    The models that read every source (the quarantine, the load ledger, the undeclared fields)
    and the reconciliation test build their SQL from these declarations when they run. What
    dbt cannot take from the yml is their dependencies: it learns those while it parses a
    model, before it reads any yml (`graph` is empty then), so they are named in
    landed_source_models() below. Each run checks that list against the declarations: a
    declared source whose models are missing there fails the run naming what to add. -#}

{#- The models of every landing source, for dbt's parser (see above; checked every run) -#}
{% macro landed_source_models() %}
    {%- set models = [] -%}
    {%- do models.extend(['ods_client__events', 'dwd_client__events_checked', 'dwd_client__events']) -%}
    {%- do models.extend(['ods_appdb__user_changes', 'dwd_appdb__user_changes_checked']) -%}
    {%- do models.extend(['ods_appdb__video_changes', 'dwd_appdb__video_changes_checked']) -%}
    {{ return(models) }}
{% endmacro %}

{#- Makes the calling model or test depend on every landing source's models (while dbt
    parses), and checks them against the declarations (when it runs). Call it once at the top
    of a model that reads every source. -#}
{% macro depends_on_landed_sources() %}
    {%- if not execute -%}
        {%- for name in landed_source_models() -%}-- depends_on: {{ ref(name) }}
{% endfor -%}
    {%- else -%}
        {%- do declared_landed_sources() -%}
    {%- endif -%}
{% endmacro %}

{#- Every declared landing source, from graph.sources, in a stable order, as
    {source_name, table_name, source_table, listing, ods, typed, accepted_in, unique_key,
    changelog_key}.
    Fails naming what to add when a declared source lacks its listing or its models, or its
    models are not in landed_source_models(). -#}
{% macro declared_landed_sources() %}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {%- set registered = landed_source_models() -%}
    {%- set models = {} -%}
    {%- for node in graph.nodes.values() if node.resource_type == 'model' -%}
        {%- do models.update({node.name: node}) -%}
    {%- endfor -%}
    {%- set listings = {} -%}
    {%- for node in graph.sources.values() if node.meta.get('landing_format') == 'binaryFile' -%}
        {%- do listings.update({node.source_name ~ '.' ~ node.meta.get('landing_folder'): node.name}) -%}
    {%- endfor -%}
    {%- set sources = [] -%}
    {%- for node in graph.sources.values() | sort(attribute='unique_id') if node.meta.get('landing_format') == 'text' -%}
        {%- set name = node.source_name ~ '.' ~ node.name -%}
        {%- set source = {
            'source_name': node.source_name,
            'table_name': node.name,
            'source_table': node.identifier,
            'listing': listings.get(node.source_name ~ '.' ~ node.meta.get('landing_folder')),
            'ods': 'ods_' ~ node.source_name ~ '__' ~ node.name,
            'typed': 'dwd_' ~ node.source_name ~ '__' ~ node.name ~ '_checked',
            'accepted_in': node.meta.get('accepted_in'),
            'unique_key': node.meta.get('unique_key'),
            'changelog_key': node.meta.get('changelog_key'),
        } -%}
        {%- if source.listing is none -%}
            {{ exceptions.raise_compiler_error("landing source " ~ name ~ " has no listing: declare a source table with meta {landing_folder: "
                ~ node.meta.get('landing_folder') ~ ", landing_format: binaryFile} in source " ~ node.source_name ~ " (docs/adding-a-source.md)") }}
        {%- endif -%}
        {%- if source.accepted_in and not source.unique_key -%}
            {{ exceptions.raise_compiler_error("landing source " ~ name ~ " sets meta.accepted_in without meta.unique_key (the key its copies are told apart by)") }}
        {%- endif -%}
        {%- set needed = [source.ods, source.typed] + ([source.accepted_in] if source.accepted_in else []) -%}
        {%- for model_name in needed -%}
            {%- if model_name not in models -%}
                {{ exceptions.raise_compiler_error("landing source " ~ name ~ " has no model " ~ model_name
                    ~ ": every landing source needs " ~ source.ods ~ " (its raw lines: {{ ods_landed_lines('" ~ node.source_name ~ "', '" ~ node.name ~ "') }}) and "
                    ~ source.typed ~ " (each line typed, with reject_reason) (docs/adding-a-source.md)") }}
            {%- elif model_name not in registered -%}
                {{ exceptions.raise_compiler_error("landing source " ~ name ~ ": add '" ~ model_name
                    ~ "' to landed_source_models() in macros/landing/landed_sources.sql, so that the quarantine, the load ledger"
                    ~ " and the reconciliation test read it (dbt learns their dependencies before it reads the sources' yml)") }}
            {%- endif -%}
        {%- endfor -%}
        {%- do sources.append(source) -%}
    {%- endfor -%}
    {{ return(sources) }}
{% endmacro %}

{#- The `source_table` of every landing source, as SQL string literals for `in (...)` -#}
{% macro landed_source_tables() %}
    {%- set names = [] -%}
    {%- for source in declared_landed_sources() -%}{%- do names.append(source.source_table) -%}{%- endfor -%}
    {{ return(_quoted(names)) }}
{% endmacro %}
