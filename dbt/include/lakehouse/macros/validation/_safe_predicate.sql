{#- Checks a SQL predicate before it is rendered into a statement (a maintenance `where`,
    a model's `merge_delete_when`): it is split into tokens and only the pieces of a plain
    boolean expression are accepted (identifiers, optionally dotted; numbers; '...' or "..."
    strings without quotes or backslashes inside; comparisons, + - * /, parentheses, commas;
    a few keywords and functions). Anything else (;, comments, backticks, backslashes,
    unbalanced quotes or parentheses, statement keywords such as select or drop, other
    function calls such as reflect) fails compilation with the macro, the argument and the
    offending token. Returns the predicate unchanged. -#}
{% macro _safe_predicate(predicate, macro_name, argument) %}
    {#- pure functions that filters use; reflect/java_method and the like stay out -#}
    {%- set functions = ['coalesce', 'lower', 'upper', 'trim', 'to_date', 'to_timestamp',
                         'date_add', 'date_sub', 'add_months', 'current_date', 'current_timestamp'] -%}
    {#- words that would turn the predicate into a statement or a subquery -#}
    {%- set forbidden = ['select', 'from', 'where', 'with', 'union', 'intersect', 'except', 'minus',
                         'join', 'values', 'table', 'into', 'drop', 'insert', 'delete', 'update',
                         'merge', 'call', 'create', 'alter', 'truncate', 'grant', 'revoke', 'set',
                         'reset', 'use', 'load', 'refresh', 'cache', 'uncache', 'msck', 'describe',
                         'show', 'explain', 'exec', 'execute'] -%}
    {%- set token_pattern = "(?P<space>\\s+)"
        ~ "|(?P<string>'[^']*'|\"[^\"]*\")"
        ~ "|(?P<number>[0-9]+(?:[.][0-9]+)?(?:[eE][-+]?[0-9]+)?)"
        ~ "|(?P<word>[A-Za-z_][A-Za-z0-9_]*(?:[.][A-Za-z_][A-Za-z0-9_]*)*)"
        ~ "|(?P<comment>--|/[*]|[*]/)"
        ~ "|(?P<operator><=|>=|<>|!=|==|[=<>+*/(),-])"
        ~ "|(?P<other>.)" -%}

    {%- if predicate is not string or not predicate.strip() -%}
        {{ exceptions.raise_compiler_error(macro_name ~ ": " ~ argument ~ " must be a non-empty predicate string, got: " ~ predicate) }}
    {%- endif -%}
    {%- set tokens = [] -%}
    {%- for match in modules.re.finditer(token_pattern, predicate) if match.lastgroup != 'space' -%}
        {%- do tokens.append({'kind': match.lastgroup, 'text': match.group(0)}) -%}
    {%- endfor -%}

    {%- set depth = {'open': 0} -%}
    {%- for token in tokens -%}
        {%- set text = token.text -%}
        {%- set reason = none -%}
        {%- if token.kind == 'other' -%}
            {%- set reason = {';': 'a statement separator is not allowed',
                              '`': 'quoted identifiers (backticks) are not allowed',
                              '\\': 'backslashes are not allowed',
                              "'": 'unterminated string literal',
                              '"': 'unterminated string literal'}.get(text, 'this character is not allowed') -%}
        {%- elif token.kind == 'comment' -%}
            {%- set reason = 'comment markers are not allowed' -%}
        {%- elif token.kind == 'string' and '\\' in text -%}
            {%- set reason = 'backslashes are not allowed in string literals' -%}
        {%- elif token.kind == 'word' -%}
            {%- set word = text | lower -%}
            {%- set calls = loop.nextitem is defined and loop.nextitem.text == '(' -%}
            {%- set statement_words = word.split('.') | select('in', forbidden) | list -%}
            {%- if statement_words -%}
                {%- set reason = "'" ~ statement_words[0] ~ "' is not allowed (no statements or subqueries)" -%}
            {%- endif -%}
            {%- if calls and word not in ['and', 'or', 'not', 'in'] and word not in functions -%}
                {%- set reason = 'function calls other than ' ~ (functions | join(', ')) ~ ' are not allowed' -%}
            {%- endif -%}
        {%- elif text == '(' -%}
            {%- do depth.update({'open': depth.open + 1}) -%}
        {%- elif text == ')' -%}
            {%- do depth.update({'open': depth.open - 1}) -%}
            {%- if depth.open < 0 -%}
                {%- set reason = 'unbalanced parentheses' -%}
            {%- endif -%}
        {%- endif -%}
        {%- if reason is none and loop.last and depth.open > 0 -%}
            {%- set reason = 'unbalanced parentheses (' ~ depth.open ~ ' left open)' -%}
        {%- endif -%}
        {%- if reason is not none -%}
            {{ exceptions.raise_compiler_error(macro_name ~ ": " ~ argument ~ " rejected at '" ~ text ~ "': "
                ~ reason ~ "; got: " ~ predicate) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(predicate) }}
{% endmacro %}
