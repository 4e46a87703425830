"""Completeness watermarks: DWD events records in its snapshot summary the event time up to
which it is complete (newest arrival minus the allowance), DWS records what it computed from,
and with var publish_complete_days_only a DWS model publishes a day only once DWD's watermark
has passed its end.

A warehouse of its own (var schema_prefix) gets one batch (one day of events, 2026-01-0n for
batch n) per test; allowance 12 hours, so after batch n DWD is complete through about
2026-01-0n 12:00. The tests run in file order.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest
from layers import assert_frames_equal, expected_user_daily, landed_events, valid_unique_events

from scripts.generate_landing import LandingGenerator, Scale

PREFIX = "complete_"
SEED = 53
SCALE = Scale(users=100, videos=30, events_per_batch=500, batches=3, min_changes_per_batch=4)
DWD = f"{PREFIX}dwd.dwd_client__events"
DWS = f"{PREFIX}dws.dws_user__daily"
STAMPED = "summary['lakehouse.complete-through'] is not null"


class Gated:
    def __init__(self, root: Path, dbt, spark) -> None:
        self.root, self._dbt, self.spark = root, dbt, spark
        LandingGenerator(root, SEED, SCALE).run(log=lambda _: None)
        self.held = root / "held"  # batches land one per test
        for folder in (root / "landing").glob("*/batch=*"):
            if folder.name != "batch=000001":
                target = self.held / folder.parent.name / folder.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(folder, target)

    def dbt(self, *args: str):
        variables = {
            "schema_prefix": PREFIX,
            "completeness_allowance_hours": 12,
            "publish_complete_days_only": True,
        }
        return self._dbt([*args, "--vars", json.dumps(variables)], landing=self.root / "landing")

    def land(self, batch: int):
        for folder in self.held.glob(f"*/batch={batch:06d}"):
            shutil.move(folder, self.root / "landing" / folder.parent.name / folder.name)
        return self.dbt("run", "--select", "+dws_user__daily")

    def published_days(self) -> set[str]:
        rows = self.spark.sql(f"select distinct cast(event_date as string) from {DWS}").collect()
        return {row[0] for row in rows}

    def watermark(self, table: str) -> str:
        """The newest lakehouse.complete-through in the table's snapshot summaries."""
        query = (
            f"select summary['lakehouse.complete-through'] from {table}.snapshots "
            "where summary['lakehouse.complete-through'] is not null "
            "order by committed_at desc limit 1"
        )
        return self.spark.sql(query).first()[0]

    def assert_days_match_the_landing(self, days: set[str]) -> None:
        """DWS's rows of `days` equal a recomputation from the landed files."""
        expected = expected_user_daily(valid_unique_events(landed_events(self.root)))
        expected = expected[expected["event_date"].isin({date.fromisoformat(d) for d in days})]
        actual = self.spark.table(DWS).select(*expected.columns).toPandas()
        actual = actual[actual["event_date"].isin(set(expected["event_date"]))]
        assert_frames_equal(actual, expected, ["user_id", "event_date"])


@pytest.fixture(scope="module")
def gated(dbt, spark, data_dir) -> Gated:
    return Gated(data_dir / "completeness", dbt, spark)


def test_a_day_waits_until_the_watermark_passes_its_end(gated):
    run = gated.land(1)
    through = gated.watermark(DWD)
    # the newest arrival of batch 1 (close to the end of 2026-01-01) minus 12 hours
    assert "2026-01-01 11:00" < through < "2026-01-01 12:01"
    assert "2026-01-01" in run.log and "not complete yet" in run.log
    assert "2026-01-01" not in gated.published_days()
    assert all(day < "2026-01-01" for day in gated.published_days())
    assert gated.watermark(DWS) == through


def test_the_day_is_published_once_covered(gated):
    run = gated.land(2)
    assert "2026-01-02 11:00" < gated.watermark(DWD) < "2026-01-02 12:01"
    assert "2026-01-01" in gated.published_days()
    assert "2026-01-02" not in gated.published_days() and "not complete yet" in run.log
    gated.assert_days_match_the_landing({"2026-01-01"})


def test_late_events_revise_a_published_day(gated):
    """Batch 3 brings late events of earlier days: those days are recomputed, and the newly
    complete day is published."""
    gated.land(3)
    assert {"2026-01-01", "2026-01-02"} <= gated.published_days()
    assert "2026-01-03" not in gated.published_days()
    gated.assert_days_match_the_landing({"2026-01-01", "2026-01-02"})


def test_the_watermark_command_prints_every_table(gated):
    run = gated.dbt("run-operation", "completeness")
    through = gated.watermark(DWD)
    assert f"{PREFIX}dwd.dwd_client__events  complete through {through}" in run.log
    assert f"{PREFIX}dws.dws_user__daily  complete through {through}" in run.log


def test_a_completeness_upstream_the_model_does_not_read_fails_naming_it(dbt, tmp_path):
    """A folder default naming a table a model does not read must not stamp the model with that
    table's watermark: `upstreams` names models it reads, or is `refs` (derived from them)."""
    from scratch_project import write_scratch_project

    project = write_scratch_project(
        tmp_path / "project",
        {
            "complete_upstream.sql": "select 1 as id",
            "complete_misnamed.sql": (
                "{{ config(materialized='table',"
                " completeness={'upstreams': ['complete_upstream']}) }}\nselect 2 as id"
            ),
        },
    )
    run = dbt(["run", "--project-dir", str(project)], expect_success=False)
    assert not run.success
    assert "completeness upstream 'complete_upstream' is not a model it reads" in run.log


def test_a_write_that_leaves_the_watermark_where_it_was_stamps_nothing(gated):
    """A backfill of a published day writes DWS again, but its upstream's watermark, and so
    its own, stays: the stamp is not committed a second time (an empty snapshot a run)."""

    def stamps() -> int:
        query = f"select count(*) from {DWS}.snapshots where {STAMPED}"
        return gated.spark.sql(query).first()[0]

    before, through = stamps(), gated.watermark(DWS)
    run = gated.dbt(
        "run", "--select", "dws_user__daily",
        "--event-time-start", "2026-01-01", "--event-time-end", "2026-01-02",
    )  # fmt: skip
    assert run.success, run.log[-2000:]
    head = gated.spark.sql(
        f"select operation, summary['added-data-files'] from {DWS}.snapshots "
        "order by committed_at desc limit 1"
    ).first()
    # the head is the day written again, no empty snapshot repeating the stamp after it
    assert head[0] == "overwrite" and int(head[1]) > 0, head
    assert gated.watermark(DWS) == through
    assert stamps() == before
