"""Retention rules decided without Spark (dbt/adapters/lakehouse/retention.py): what a rule
keeps, what it refuses, and when the nightly step is due. The delete on real tables:
test_maintenance.py."""

from __future__ import annotations

from datetime import date

import pytest

from dbt.adapters.lakehouse.retention import (
    RetentionError,
    RetentionRule,
    backfill_refusal,
    decide,
    delete_outcome,
    read_rule,
    refusal,
)

TABLE = "dwd.dwd_client__events"


def test_a_rule_keeps_its_days_up_to_the_newest_one():
    rule = read_rule({"column": "event_at", "keep_days": "3"}, TABLE)
    assert rule == RetentionRule(column="event_at", keep_days=3)
    assert rule.cutoff(date(2026, 1, 10)) == date(2026, 1, 8)  # the 8th, 9th and 10th kept
    assert read_rule(None, TABLE) is None and read_rule({}, TABLE) is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("400 days", "expected {column: <date or timestamp column>, keep_days: <days>}"),
        ({"column": "event_at", "keep_days": 3, "keep": 1}, "unknown setting keep"),
        ({"column": "event_at; drop table x", "keep_days": 3}, "column must name one column"),
        ({"keep_days": 3}, "column must name one column"),
        ({"column": "event_at", "keep_days": 0}, "keep_days must be a whole number of days"),
        ({"column": "event_at", "keep_days": 2.5}, "keep_days must be a whole number of days"),
        ({"column": "event_at", "keep_days": True}, "keep_days must be a whole number of days"),
    ],
)
def test_a_rule_that_cannot_be_applied_is_refused_naming_the_table(config, message):
    with pytest.raises(RetentionError, match=f"retention of {TABLE}: ") as error:
        read_rule(config, TABLE)
    assert message in str(error.value)


def test_a_load_ledger_may_expire_its_lines():
    """ODS's files and positions stay known in the compact ledger: only windows refuse."""
    rule = RetentionRule(column="_loaded_at", keep_days=30)
    assert refusal("ods.ods_client__events", rule, lookbacks={"ods_client__events": None}) is None


def test_a_window_a_reader_re_reads_is_refused_naming_the_reader():
    rule = RetentionRule(column="event_at", keep_days=30)
    lookbacks = {"dwd_client__events": 30, "dws_user__daily": 30, "dim_users": None}
    refused = refusal(TABLE, rule, lookbacks=lookbacks)
    assert "keeps 30 days by event_at" in refused
    assert "dwd_client__events (30 days), dws_user__daily (30 days)" in refused
    assert "dim_users" not in refused and "keep more days than 30" in refused
    longer = RetentionRule(column="event_at", keep_days=31)
    assert refusal(TABLE, longer, lookbacks=lookbacks) is None


def test_the_step_is_due_only_when_a_row_lies_before_the_window():
    rule = RetentionRule(column="event_date", keep_days=3)
    due = decide(rule, "2026-01-05", "2026-01-10 23:59:59")
    assert due["due"] and due["cutoff"] == "2026-01-08"
    assert "rows from 2026-01-05 before 2026-01-08" in due["reason"]
    kept = decide(rule, "2026-01-08", "2026-01-10")
    assert not kept["due"] and "the oldest, 2026-01-08, is kept" in kept["skip"]
    empty = decide(rule, None, None)
    assert not empty["due"] and "no rows" in empty["skip"]


def test_a_backfill_may_start_at_the_first_day_kept_and_not_before():
    rule = RetentionRule(column="event_at", keep_days=3)
    newest = "2026-01-10 08:00:00"
    assert backfill_refusal(TABLE, rule, newest, "2026-01-08", own=True) is None
    refused = backfill_refusal(TABLE, rule, newest, "2026-01-07", own=False)
    assert f"{TABLE} keeps its days from 2026-01-08 on (retention: 3 days of event_at)" in refused
    assert "start the backfill at 2026-01-08 or later" in refused
    assert "would come back" not in refused
    assert "would come back" in backfill_refusal(TABLE, rule, newest, "2026-01-07", own=True)
    assert backfill_refusal(TABLE, rule, None, "2026-01-01", own=True) is None  # empty table


def test_the_log_says_whether_the_delete_wrote_a_file():
    step = {"cutoff": "2026-01-04", "reason": "why"}
    summary = {"deleted-records": 60, "deleted-data-files": 6, "removed-files-size": 6546}
    dropped = delete_outcome({**summary, "added-data-files": None}, step)
    assert dropped == (
        "delete_expired_rows removed 60 rows before 2026-01-04: 6 data files dropped"
        " (6546 bytes), none written: metadata only (why)"
    )
    rewritten = {"deleted-records": 120, "added-records": 60, "added-data-files": 2}
    rewritten = delete_outcome(rewritten, step)
    assert "removed 60 rows" in rewritten and "2 files written" in rewritten
    deletes = delete_outcome({"added-position-deletes": 7, "added-delete-files": 1}, step)
    assert "removed 7 rows" in deletes and "1 file written" in deletes
