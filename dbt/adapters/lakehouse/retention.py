"""Which rows a table's retention rule removes, as plain functions of the rule and of what was
read from the table: no Spark and no dbt, so every rule and refusal is unit-tested
(tests/python/test_retention_decision.py). The nightly maintenance (iceberg_maintain_all)
renders the delete and acts; docs/retention.md.

A rule keeps the last `keep_days` days of a date or timestamp column, counted back from the
newest value the column holds (not from the calendar: a source that stops delivering keeps
its last window instead of emptying). Rows dated before the cutoff are deleted. Where the
column is the table's partition source, that delete drops whole files and rewrites none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
STEP = "delete_expired_rows"


class RetentionError(ValueError):
    """A retention rule that cannot be applied; the message names the table and the fix."""


@dataclass(frozen=True)
class RetentionRule:
    """Keep the rows whose `column` lies within the last `keep_days` days of its newest value."""

    column: str
    keep_days: int

    def cutoff(self, newest: date) -> date:
        """The first day kept: `keep_days` days up to and including the newest one."""
        return newest - timedelta(days=self.keep_days - 1)


def read_rule(config: Any, table: str) -> RetentionRule | None:
    """A model's `retention` config, checked: none when it has no rule."""
    if config is None or config == {}:
        return None
    if not isinstance(config, dict):
        raise RetentionError(
            f"retention of {table}: expected {{column: <date or timestamp column>, keep_days: "
            f"<days>}}, got {config!r}"
        )
    unknown = sorted(set(config) - {"column", "keep_days"})
    if unknown:
        raise RetentionError(
            f"retention of {table}: unknown setting {', '.join(unknown)} (the settings are column"
            " and keep_days)"
        )
    column = config.get("column")
    if not isinstance(column, str) or not IDENTIFIER.match(column):
        raise RetentionError(
            f"retention of {table}: column must name one column of the table, got {column!r}"
        )
    days = config.get("keep_days")
    if isinstance(days, str) and days.strip().isdigit():
        days = int(days)
    if isinstance(days, bool) or not isinstance(days, int) or days < 1:
        raise RetentionError(
            f"retention of {table}: keep_days must be a whole number of days, at least 1, got"
            f" {days!r}"
        )
    return RetentionRule(column=column, keep_days=days)


def refusal(table: str, rule: RetentionRule, lookbacks: dict[str, int]) -> str | None:
    """Why `rule` must not run on `table`, or none. `lookbacks`: {model: days} for the table
    itself and each model reading it that re-reads rows that far back (config
    `lookback_days`). A load ledger (ODS) may expire too: its expiring lines' files and
    source positions are kept in the compact ledger first (docs/retention.md)."""
    reaching = {
        model: int(days)
        for model, days in lookbacks.items()
        if days is not None and int(days) >= rule.keep_days
    }
    if reaching:
        readers = ", ".join(f"{model} ({days} days)" for model, days in sorted(reaching.items()))
        return (
            f"retention of {table}: it keeps {rule.keep_days} days by {rule.column}, but {readers}"
            f" re-read rows up to that far back (lookback_days): keep more days than"
            f" {max(reaching.values())} (docs/retention.md)"
        )
    return None


def decide(rule: RetentionRule, oldest: str | None, newest: str | None) -> dict[str, Any]:
    """The retention step of one nightly run, from the column's oldest and newest values
    (ISO dates or timestamps as read): {step, due, cutoff, reason, skip}, due when a row
    lies before the cutoff (the first day kept)."""
    if not oldest or not newest:
        return {"step": STEP, "due": False, "cutoff": None, "reason": "",
                "skip": f"{STEP} skipped (no rows)"}  # fmt: skip
    last = date.fromisoformat(str(newest)[:10])
    cutoff = rule.cutoff(last)
    first = date.fromisoformat(str(oldest)[:10])
    window = f"{rule.keep_days} days of {rule.column} kept, up to {last}"
    return {
        "step": STEP,
        "due": first < cutoff,
        "cutoff": cutoff.isoformat(),
        "reason": f"rows from {first} before {cutoff}: {window}",
        "skip": f"{STEP} skipped (the oldest, {first}, is kept: {window})",
    }


def backfill_refusal(
    table: str, rule: RetentionRule, newest: str | None, start: str, own: bool
) -> str | None:
    """Why a backfill from day `start` must not run, when `table` (the backfilled model itself
    when `own`, else a model it reads) keeps its days under `rule` and its column's newest
    value is `newest`: the days before the first one kept cannot be recomputed, and the
    model's own would come back. None when the backfill may run (or the table is empty)."""
    if not newest:
        return None
    first = rule.cutoff(date.fromisoformat(str(newest)[:10]))
    if date.fromisoformat(start[:10]) >= first:
        return None
    return (
        f"{table} keeps its days from {first} on (retention: {rule.keep_days} days of"
        f" {rule.column}), so the days before cannot be recomputed"
        f"{' and would come back' if own else ''}: start the backfill at {first} or later"
        " (docs/retention.md)"
    )


# the retention delete's commit summary counters that delete_outcome reads
SUMMARY_KEYS = (
    "deleted-records",
    "added-records",
    "added-position-deletes",
    "deleted-data-files",
    "removed-files-size",
    "added-data-files",
    "added-delete-files",
)


def delete_outcome(summary: dict[str, int], step: dict[str, Any]) -> str:
    """The maintenance log's text for a retention delete, from the counters of the commit it
    made (SUMMARY_KEYS; a missing one is 0): rows removed (a rewrite's kept rows and written
    position deletes counted), data files dropped, bytes, and whether it wrote any file (none
    when whole partitions dropped: metadata only)."""
    n = {key: int(summary.get(key) or 0) for key in SUMMARY_KEYS}
    removed = n["deleted-records"] - n["added-records"] + n["added-position-deletes"]
    written = n["added-data-files"] + n["added-delete-files"]
    files = f"{written} file{'' if written == 1 else 's'}"
    how = (
        "none written: metadata only"
        if written == 0
        else f"{files} written (the column is no partition source)"
    )
    return (
        f"{STEP} removed {removed} rows before {step['cutoff']}: {n['deleted-data-files']} data"
        f" files dropped ({n['removed-files-size']} bytes), {how} ({step['reason']})"
    )
