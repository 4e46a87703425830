"""Security of the macros and the repository: every macro argument that reaches SQL is
validated or quoted (injection attempts fail at compile time with a message naming the
macro, the argument and the offending token), and no secret is committed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from scripts.spark_config import PROJECT_DIR

RELATION = "api.Relation.create(schema='dwd', identifier='dwd_client__events')"


def compiled(dbt, expression: str) -> str:
    result = dbt(["compile", "--inline", expression, "--quiet"])
    return result.result.results[0].node.compiled_code


def compile_error(dbt, expression: str) -> str:
    result = dbt(["compile", "--inline", expression, "--quiet"], expect_success=False)
    assert not result.success, f"compiled although it should not: {expression}"
    return result.log


def merge_sql(delete_when: str) -> str:
    """get_merge_sql (the adapter's lakehouse__get_merge_sql) as dbt calls it for a model
    configured with merge_delete_when."""
    target = "api.Relation.create(schema='dwd', identifier='dim_users')"
    source = "api.Relation.create(identifier='dim_users__dbt_tmp')"
    return (
        "{{ config(merge_delete_when=" + repr(delete_when) + ") }}"
        # parsing only records the config; the merge renders when dbt executes
        "{% if execute %}{{ get_merge_sql("
        + target
        + ", "
        + source
        + ", 'user_id', [], none) }}{% endif %}"
    )


# -- injection attempts: each fails at compile time, naming macro, argument and token -------

WHERE = "rewrite_data_files: where rejected at "

INJECTIONS = {
    # where: a predicate rendered inside the CALL's '...' argument
    "where closes the literal": (
        'rewrite_data_files(RELATION, where="1=1\'); drop table x; --")',
        WHERE + "''': unterminated string literal",
    ),
    "where with a second statement": (
        "rewrite_data_files(RELATION, where='id = 1; drop table x')",
        WHERE + "';': a statement separator is not allowed",
    ),
    "where with a line comment": (
        "rewrite_data_files(RELATION, where='id = 1 -- and day = 2')",
        WHERE + "'--': comment markers are not allowed",
    ),
    "where with a block comment": (
        "rewrite_data_files(RELATION, where='id = 1 /* x */')",
        WHERE + "'/*': comment markers are not allowed",
    ),
    "where with a subquery": (
        "rewrite_data_files(RELATION, where='id in (select id from dwd.secrets)')",
        WHERE + "'select': 'select' is not allowed (no statements or subqueries)",
    ),
    "where with union": (
        "rewrite_data_files(RELATION, where='id = 1 union all values (1)')",
        WHERE + "'union': 'union' is not allowed",
    ),
    "where with a backtick": (
        "rewrite_data_files(RELATION, where='`id` = 1')",
        WHERE + "'`': quoted identifiers (backticks) are not allowed",
    ),
    "where escaping a quote": (
        "rewrite_data_files(RELATION, where=\"note = 'a\\\\' or 1=1\")",
        WHERE + "''a\\'': backslashes are not allowed in string literals",
    ),
    "where with a bare backslash": (
        "rewrite_data_files(RELATION, where='id = 1 \\\\ 2')",
        WHERE + "'\\': backslashes are not allowed",
    ),
    "where calling Java": (
        "rewrite_data_files(RELATION, where=\"reflect('java.lang.System', 'exit', '0') is null\")",
        WHERE + "'reflect': function calls other than coalesce",
    ),
    "where with a variable": (
        "rewrite_data_files(RELATION, where='id = ${hivevar:x}')",
        WHERE + "'$': this character is not allowed",
    ),
    "where with an open parenthesis": (
        "rewrite_data_files(RELATION, where='(id = 1')",
        WHERE + "'1': unbalanced parentheses (1 left open)",
    ),
    "where closing a parenthesis": (
        "rewrite_data_files(RELATION, where='id = 1) or (1 = 1')",
        WHERE + "')': unbalanced parentheses",
    ),
    "where not a string": (
        "rewrite_data_files(RELATION, where=['id = 1'])",
        "rewrite_data_files: where must be a non-empty predicate string",
    ),
    # options: values are rendered inside '...' in map(...)
    "option value closes the map": (
        "rewrite_data_files(RELATION, options={'rewrite-job-order': \"1'), (x\"})",
        "rewrite_data_files: option 'rewrite-job-order' has value '1'), (x'",
    ),
    "option value of position deletes": (
        "rewrite_position_delete_files(RELATION, options={'min-input-files': \"2' , 'x\"})",
        "rewrite_position_delete_files: option 'min-input-files' has value",
    ),
    "option name": (
        "rewrite_data_files(RELATION, options={\"x', 'y\": 1})",
        "rewrite_data_files: unknown option 'x', 'y'",
    ),
    # sort orders and zorder columns
    "sort order": (
        "rewrite_data_files(RELATION, strategy='sort', sort_order='user_id; drop')",
        "'user_id;' is not a column identifier",
    ),
    "sort direction": (
        "rewrite_data_files(RELATION, strategy='sort', sort_order=['user_id desc; drop'])",
        "sort term 'user_id desc; drop' must be '<column> [asc|desc]'",
    ),
    "sort term with extra words": (
        "rewrite_data_files(RELATION, strategy='sort', sort_order=['user_id asc, x'])",
        "sort term 'user_id asc, x' must be '<column> [asc|desc]'",
    ),
    "sort term not a string": (
        "rewrite_data_files(RELATION, strategy='sort', sort_order=[['user_id']])",
        "must be '<column> [asc|desc]'",
    ),
    "zorder column": (
        "rewrite_data_files(RELATION, strategy='zorder', zorder_by=['user_id)', 'x'])",
        "'user_id)' is not a column identifier",
    ),
    "strategy": (
        "rewrite_data_files(RELATION, strategy=\"binpack', x => 'y\")",
        "unknown strategy 'binpack', x => 'y'",
    ),
    # table names
    "relation identifier": (
        "rewrite_manifests(api.Relation.create(schema='dwd', identifier=\"x'; drop table y\"))",
        "'x'; drop table y' is not a schema or table identifier",
    ),
    "operator's table string": (
        "iceberg_maintain_table('dwd.x; drop table y', {'rewrite_manifests': {}})",
        "'x; drop table y' is not a schema or table identifier",
    ),
    "operator's table with three parts": (
        "iceberg_maintain_table('dwd.x;drop.y', {})",
        "iceberg_maintain_table: table must be '<schema>.<table>'",
    ),
    # numbers and booleans
    "expiry window": (
        "expire_snapshots(RELATION, older_than_hours='72); drop table x; --')",
        "expire_snapshots: older_than_hours must be a number",
    ),
    "expiry window NaN": (
        "expire_snapshots(RELATION, older_than_hours=72, min_window_hours='nan')",
        "expire_snapshots: older_than_hours must be a number >= nan",
    ),
    "expiry retain_last": (
        "expire_snapshots(RELATION, retain_last='1) --')",
        "expire_snapshots: retain_last must be >= 1",
    ),
    "orphan window NaN": (
        "remove_orphan_files(RELATION, older_than_hours='nan')",
        "remove_orphan_files: older_than_hours must be >= 24",
    ),
    "orphan dry_run": (
        "remove_orphan_files(RELATION, dry_run='false) --')",
        "remove_orphan_files: dry_run must be true or false",
    ),
    "manifest caching": (
        "rewrite_manifests(RELATION, use_caching='true); drop table x; --')",
        "rewrite_manifests: use_caching must be true or false",
    ),
}


@pytest.mark.parametrize(("expression", "message"), INJECTIONS.values(), ids=INJECTIONS.keys())
def test_injection_attempts_fail_at_compile_time(dbt, expression, message):
    log = compile_error(dbt, "{{ " + expression.replace("RELATION", RELATION) + " }}")
    assert message in log, log[-1500:]


MERGE = "lakehouse__get_merge_sql: merge_delete_when rejected at "


@pytest.mark.parametrize(
    ("delete_when", "message"),
    [
        (
            "DBT_INTERNAL_SOURCE.op = '-D' or 1=1; --",
            MERGE + "';': a statement separator is not allowed",
        ),
        (
            "DBT_INTERNAL_SOURCE.op = 'D') then delete when matched then update set x = 1 --",
            MERGE + "')': unbalanced parentheses",
        ),
        (
            "DBT_INTERNAL_SOURCE.id in (select id from dwd.other)",
            MERGE + "'select'",
        ),
    ],
)
def test_merge_delete_when_from_a_model_config_is_validated(dbt, delete_when, message):
    log = compile_error(dbt, merge_sql(delete_when))
    assert message in log, log[-1500:]


def test_the_validator_itself_names_macro_argument_and_token(dbt):
    log = compile_error(
        dbt, "{{ _safe_predicate(\"op = '-D' or 1=1; --\", 'my_macro', 'my_arg') }}"
    )
    assert "my_macro: my_arg rejected at ';': a statement separator is not allowed" in log


# -- legitimate input still renders exactly ------------------------------------------------

PREDICATES = [
    # (where as given, as rendered inside the CALL's '...' argument)
    ('event_date >= "2026-01-02"', 'event_date >= "2026-01-02"'),
    (
        "event_date >= date '2026-01-02' and user_id in (1, 2, 3)",
        "event_date >= date \\'2026-01-02\\' and user_id in (1, 2, 3)",
    ),
    (
        "note is not null and not (id between -5 and 1.5e3) or note like 'a%_;--'",
        "note is not null and not (id between -5 and 1.5e3) or note like \\'a%_;--\\'",
    ),
    (
        "event_at < current_timestamp - interval 3 days and lower(note) <> 'x'",
        "event_at < current_timestamp - interval 3 days and lower(note) <> \\'x\\'",
    ),
    (
        "t.user_id != 7 and coalesce(t.video_id, 0) == 0",
        "t.user_id != 7 and coalesce(t.video_id, 0) == 0",
    ),
]


@pytest.mark.parametrize(("where", "rendered"), PREDICATES)
def test_legitimate_predicates_render_exactly(dbt, where, rendered):
    sql = compiled(dbt, "{{ rewrite_data_files(" + RELATION + ", where=" + repr(where) + ") }}")
    assert f"where => '{rendered}'," in sql


def test_legitimate_options_sort_orders_and_merge_predicate_render(dbt):
    sql = compiled(
        dbt,
        "{{ rewrite_data_files(" + RELATION + ", strategy='sort', sort_order=['user_id DESC'], "
        "options={'rewrite-job-order': 'bytes-asc', 'max-file-group-size-bytes': 1073741824, "
        "'rewrite-all': false, 'partial-progress.max-commits': '10'}) }}",
    )
    assert "sort_order => 'user_id DESC NULLS LAST'" in sql
    for option in (
        "'rewrite-job-order', 'bytes-asc'",
        "'max-file-group-size-bytes', '1073741824'",
        "'rewrite-all', 'false'",
        "'partial-progress.max-commits', '10'",
    ):
        assert option in sql
    merge = compiled(dbt, merge_sql("DBT_INTERNAL_SOURCE._change_op = 'delete'"))
    assert "when matched and (DBT_INTERNAL_SOURCE._change_op = 'delete') then delete" in merge
    assert "when not matched and not (DBT_INTERNAL_SOURCE._change_op = 'delete') then insert *" in (
        merge
    )


def test_an_escaped_where_runs_and_selects_only_its_files(spark, dbt):
    """The escaping is what Spark parses: a quoted literal in `where` reaches Iceberg intact
    and limits the rewrite to the matching files."""
    spark.sql("create schema if not exists security")
    spark.sql("drop table if exists security.escaped_where purge")
    spark.sql("create table security.escaped_where (id int, note string) using iceberg")
    for i in range(6):
        spark.sql(f"insert into security.escaped_where values ({i}, '{'ab'[i % 2]}')")
    relation = "api.Relation.create(schema='security', identifier='escaped_where')"
    sql = compiled(
        dbt,
        "{{ rewrite_data_files(" + relation + ", where=\"note = 'b' and id >= 0\", "
        "options={'min-input-files': 1, 'rewrite-all': true}) }}",
    )
    result = spark.sql(sql).first()
    assert result.rewritten_data_files_count == 3  # the 'b' files only
    assert spark.sql("select count(*) from security.escaped_where.data_files").first()[0] == 4
    assert spark.sql("select count(*) from security.escaped_where").first()[0] == 6


# -- secrets ----------------------------------------------------------------------------------

SECRET_KEYS = re.compile(r"pass(word)?|secret|token|credential|private|api_?key|access_?key", re.I)
SECRET_PATTERNS = {
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "AWS access key id": re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    "AWS secret key": re.compile(r"aws_secret_access_key\s*[:=]\s*['\"]?[A-Za-z0-9/+=]{40}", re.I),
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    "Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    "password in a URL": re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s:@]+@", re.I),
}


def literal_secrets(node: object, path: str = "") -> list[str]:
    """Keys that look like secrets and hold a literal instead of an env_var() lookup."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if SECRET_KEYS.search(str(key)) and not (
                isinstance(value, str) and "env_var(" in value
            ):
                found.append(here)
            found += literal_secrets(value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += literal_secrets(value, f"{path}[{i}]")
    return found


def secrets_in(text: str) -> list[str]:
    return [name for name, pattern in SECRET_PATTERNS.items() if pattern.search(text)]


def test_profiles_read_secrets_from_the_environment():
    profiles = yaml.safe_load((PROJECT_DIR / "profiles" / "profiles.yml").read_text())
    assert profiles["lakehouse"]["outputs"]  # the file was parsed
    assert literal_secrets(profiles) == []
    # the check itself catches a literal and lets an env_var() through
    planted = {"cluster": {"password": "hunter2", "token": "{{ env_var('LAKEHOUSE_TOKEN') }}"}}
    assert literal_secrets(planted) == ["cluster.password"]


def test_no_tracked_file_contains_a_secret():
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(files) > 20
    leaks = {}
    for name in files:
        path = Path(PROJECT_DIR) / name
        if path.is_file():
            found = secrets_in(path.read_text(errors="ignore"))
            if found:
                leaks[name] = found
    assert leaks == {}
    # the patterns do match real-looking secrets (built here so this file holds none)
    sample = "\n".join(
        [
            "-----BEGIN " + "RSA PRIVATE KEY-----",
            "AKIA" + "Z" * 16,
            "aws_secret_access_key = " + "a" * 40,
            "gh" + "p_" + "b" * 36,
            "https://dbt:" + "s3cret@example.com/",
        ]
    )
    assert len(secrets_in(sample)) == 5
