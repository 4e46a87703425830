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


def refusal(
    table: str, rule: RetentionRule, load_ledger: bool, lookbacks: dict[str, int]
) -> str | None:
    """Why `rule` must not run on `table`, or none. `load_ledger`: the table is a load ledger
    (ODS: its lines say which landed files and source positions were loaded, so deleting
    them would load those files again). `lookbacks`: {model: days} for the table itself and
    each model reading it that re-reads rows that far back (config `lookback_days`)."""
    if load_ledger:
        return (
            f"retention of {table}: this table is the load ledger exactly-once rests on (its rows"
            " say which landed files and source positions were loaded): without them those files"
            " would be loaded again and their records taken for new. It keeps every row"
            " (docs/retention.md)"
        )
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


def first_kept_day(rule: RetentionRule, newest: str | None) -> str | None:
    """The first day `rule` keeps of a table whose column's newest value is `newest` (none
    when the table is empty): a backfill cannot recompute the days before it."""
    if not newest:
        return None
    return rule.cutoff(date.fromisoformat(str(newest)[:10])).isoformat()
