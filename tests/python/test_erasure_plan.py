"""The erasure's decisions (dbt/adapters/lakehouse/erasure.py) without Spark: which rules and
requests are refused, what each table's statement matches and sets. The regular expressions
are Spark SQL string literals: they are unescaped here as Spark does and run with Python's
`re`, whose syntax for them is Java's."""

from __future__ import annotations

import re

import pytest

from dbt.adapters.lakehouse import erasure

RAW = {"json": {"column": "_raw_line", "fields": ["user_id"], "keep": ["_kafka_offset"]},
       "detach_json": {"column": "_raw_line", "fields": ["author_user_id"]}}  # fmt: skip


def sql_literal(predicate: str, function: str) -> str:
    """The first '...' argument after `function` in `predicate`, unescaped as Spark does."""
    start = predicate.index(function + " '") + len(function) + 2
    text, i = [], start
    while predicate[i] != "'":
        if predicate[i] == "\\":
            i += 1
        text.append(predicate[i])
        i += 1
    return "".join(text)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("user_id", "expected a mapping"),
        ({"column": "user_id"}, "unknown setting column"),
        ({"columns": ["user id"]}, "columns must name columns"),
        ({"columns": []}, "columns must list columns"),
        ({"json": {"column": "_raw_line"}}, "json must be {column"),
        (
            {"detach": ["a"], "detach_json": {"column": "c", "fields": ["a"], "keep": ["b"]}},
            "detach_json must be {column",
        ),
        ({"recompute": "yes"}, "recompute is true or false"),
    ],
)
def test_a_rule_that_cannot_be_applied_is_refused_naming_the_table(config, message):
    with pytest.raises(erasure.ErasureError, match=re.escape(message)) as error:
        erasure.read_rule(config, "dwd.t")
    assert "erasure of dwd.t" in str(error.value)


def test_no_rule_is_no_erasure():
    assert erasure.read_rule(None, "t") is None
    assert erasure.read_rule({}, "t") is None


@pytest.mark.parametrize(
    ("request_name", "subjects", "message"),
    [
        ("DSR 42", [1], "`request` names the request"),
        ("", [1], "`request` names the request"),
        ("DSR-42", [], "must list the subjects"),
        ("DSR-42", "17", "must list the subjects"),
        ("DSR-42", ["17'); drop table x; --"], "is not a subject id"),
        ("DSR-42", [True], "is not a subject id"),
    ],
)
def test_a_request_without_a_name_or_with_unsafe_ids_is_refused(request_name, subjects, message):
    with pytest.raises(erasure.ErasureError, match=re.escape(message)):
        erasure.read_request(request_name, subjects)


def test_subjects_are_checked_deduplicated_and_sorted():
    assert erasure.read_request("DSR-42", [23, "17", 23]) == ("DSR-42", ("17", "23"))


def test_a_load_ledger_redacts_its_rows_and_any_other_table_deletes_them():
    rule = erasure.read_rule(RAW, "ods.events")
    types = {"_raw_line": "string"}
    ledger = erasure.plan(rule, "ods.events", ("17",), types, True, "DSR-42")
    assert [step["action"] for step in ledger] == ["redact", "detach"]
    assert ledger[0]["sql_set"] == (
        "_raw_line = to_json(named_struct('_erased', 'DSR-42',"
        " '_kafka_offset', get_json_object(_raw_line, '$._kafka_offset')))"
    )
    rows = erasure.read_rule({"columns": ["user_id"]}, "dwd.events")
    plain = erasure.plan(rows, "dwd.events", ("17",), {"user_id": "bigint"}, False, "DSR-42")
    assert plain == [{"action": "delete", "predicate": "(user_id in (17))", "sql_set": None}]


def test_ids_are_literals_of_the_column_type_and_a_non_number_never_matches_a_number():
    rule = erasure.read_rule({"columns": ["user_id", "owner"]}, "t")
    types = {"user_id": "bigint", "owner": "string"}
    (step,) = erasure.plan(rule, "t", ("17", "ab"), types, False, "R")
    assert step["predicate"] == "(user_id in (17, null) or owner in ('17', 'ab'))"


def test_a_missing_column_and_a_ledger_without_raw_json_are_refused():
    rule = erasure.read_rule({"columns": ["user_id"]}, "t")
    with pytest.raises(erasure.ErasureError, match="no column user_id in the table"):
        erasure.plan(rule, "t", ("1",), {"other": "int"}, False, "R")
    with pytest.raises(erasure.ErasureError, match="subject must be found in a raw JSON column"):
        erasure.plan(rule, "t", ("1",), {"user_id": "int"}, True, "R")


@pytest.mark.parametrize(
    ("line", "erased"),
    [
        ('{"event_id":"e1","user_id":"17","video_id":"3"}', True),
        ('{"user_id": 17}', True),
        ('{"event_id":"e1","user_id":"17', True),  # cut short: not JSON, still the user's
        ('{"user_id":"170","video_id":"17"}', False),
        ('{"author_user_id":17,"user_id":"5"}', False),
        ('{"user_id":"a.b"}', True),
        ('{"user_id":"aXb"}', False),  # the id's dot is no wildcard
    ],
)
def test_a_raw_line_is_the_subjects_by_its_field_parsed_or_not(line, erased):
    rule = erasure.read_rule(RAW, "ods.events")
    (redact, _) = erasure.plan(rule, "ods.events", ("17", "a.b"), {"_raw_line": "s"}, True, "R")
    pattern = sql_literal(redact["predicate"], "rlike")
    assert bool(re.search(pattern, line)) is erased


@pytest.mark.parametrize(
    ("line", "detached"),
    [
        ('{"id":1,"author_user_id":17,"title":"t"}', '{"id":1,"author_user_id":null,"title":"t"}'),
        ('{"video_id":1,"author_user_id": "17"}', '{"video_id":1,"author_user_id": null}'),
        ('{"video_id":1,"author_user_id":170}', '{"video_id":1,"author_user_id":170}'),
    ],
)  # fmt: skip
def test_a_mention_in_a_raw_line_is_nulled_and_the_rest_kept(line, detached):
    rule = erasure.read_rule(RAW, "ods.videos")
    (_, detach) = erasure.plan(rule, "ods.videos", ("17",), {"_raw_line": "s"}, True, "R")
    pattern = sql_literal(detach["sql_set"], "regexp_replace(_raw_line,")
    assert re.sub(pattern, r"\1null", line) == detached


def test_the_recompute_range_spans_the_days_and_ends_the_day_after():
    days = ["2026-01-03", "2026-01-01T10:00:00", None, "2026-01-03"]
    assert erasure.recompute_range(days) == {
        "start": "2026-01-01",
        "end": "2026-01-04",
        "days": 2,
    }
    assert erasure.recompute_range([None]) is None
