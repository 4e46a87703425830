"""A backfill recomputes a range of days of DWD and DWS after a rule changed, with dbt's own
--event-time-start / --event-time-end flags.

The rule that changes: `share` events are rejected at first (var event_types without it),
then accepted. A warehouse of its own (var schema_prefix) is built with the old rule from
five batches; a reference warehouse's DWD and DWS are fully built with the new rule from the
same batches. Then a sixth batch reaches ODS, and the range is backfilled with the new rule.
The tests run in file order: each builds on the state the previous one left.
"""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from layers import EVENT_TYPES
from scratch_project import write_scratch_project

from scripts.generate_landing import LandingGenerator, Scale

PREFIX, REFERENCE = "backfill_", "backfillref_"
SEED = 47
SCALE = Scale(users=150, videos=40, events_per_batch=600, batches=6, min_changes_per_batch=4)
OLD_RULE = sorted(EVENT_TYPES - {"share"})
NEW_RULE = sorted(EVENT_TYPES)
DWD = "dwd.dwd_client__events"
DWS = ("dws.dws_user__daily", "dws.dws_video__daily")
BUILD = ["--select", "+dws_user__daily", "+dws_video__daily", "+dwd_quarantine__rejected_records"]
# the reference is read for DWD and DWS only, and the quarantine is none of their upstream
REFERENCE_BUILD = ["--select", "+dws_user__daily", "+dws_video__daily"]
BACKFILL = ["--select", "dwd_client__events+"]


class Warehouses:
    def __init__(self, root: Path, dbt, spark) -> None:
        self.root, self._dbt, self.spark = root, dbt, spark
        LandingGenerator(root, SEED, SCALE).run(log=lambda _: None)
        self.held = root / "held"  # the last batch, landed later
        for folder in (root / "landing").glob(f"*/batch={SCALE.batches:06d}"):
            target = self.held / folder.parent.name / folder.name
            target.parent.mkdir(parents=True)
            shutil.move(folder, target)

    def dbt(self, *args: str, prefix: str = PREFIX, rule=NEW_RULE, expect_success=True):
        variables = json.dumps({"schema_prefix": prefix, "event_types": rule})
        return self._dbt(
            [*args, "--vars", variables],
            landing=self.root / "landing",
            expect_success=expect_success,
        )

    def backfill(self, start: str, end: str, rule=NEW_RULE, expect_success=True):
        flags = ["--event-time-start", start, "--event-time-end", end]
        return self.dbt("run", *BACKFILL, *flags, rule=rule, expect_success=expect_success)

    def land_held_batch(self) -> None:
        for folder in self.held.glob("*/*"):
            shutil.move(folder, self.root / "landing" / folder.parent.name / folder.name)

    def rows(self, table: str, days: list[str], prefix: str = PREFIX) -> set[tuple]:
        """The table's rows of `days`, load-time columns left out (a rebuild loads anew)."""
        name = f"{prefix}{table}"
        columns = [c for c in self.spark.table(name).columns if not c.startswith("_")]
        where = f"to_date({day_column(table)}) in ({quoted(days)})"
        return {
            tuple(r)
            for r in self.spark.sql(
                f"select {', '.join(columns)} from {name} where {where}"
            ).collect()
        }

    def files(self, table: str) -> dict[str, set[str]]:
        """Data files per day partition."""
        name = f"{PREFIX}{table}"
        day = "partition.event_at_day" if table == DWD else "partition.event_date"
        found: dict[str, set[str]] = {}
        for row in self.spark.sql(
            f"select cast({day} as string), file_path from {name}.files"
        ).collect():
            found.setdefault(row[0], set()).add(row[1])
        return found

    def days(self) -> list[str]:
        query = f"select distinct cast(event_date as string) from {PREFIX}{DWD} order by 1"
        return [row[0] for row in self.spark.sql(query).collect()]


def day_column(table: str) -> str:
    return "event_at" if table == DWD else "event_date"


def quoted(days: list[str]) -> str:
    return ", ".join(f"'{day}'" for day in days)


@pytest.fixture(scope="module")
def houses(dbt, spark, data_dir) -> Warehouses:
    built = Warehouses(data_dir / "backfill", dbt, spark)
    built.dbt("run", *BUILD, rule=OLD_RULE)
    built.dbt("run", *REFERENCE_BUILD, prefix=REFERENCE)
    return built


@pytest.fixture(scope="module")
def window(houses) -> dict:
    """Two whole days inside the history, and the files every day had before the backfill."""

    days = houses.days()  # batch n lands the events of 2026-01-0n, and late ones before
    assert {"2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"} <= set(days), days
    return {
        "days": ["2026-01-02", "2026-01-03"],
        "start": "2026-01-02",
        "end": "2026-01-04",
        "files": {table: houses.files(table) for table in (DWD, *DWS)},
    }


def test_a_backfill_replaces_exactly_its_days(houses, window):
    outside = [day for day in houses.days() if day not in window["days"]]
    old_outside = {table: houses.rows(table, outside) for table in (DWD, *DWS)}
    watermark = houses.spark.sql(f"select max(_load_id) from {PREFIX}{DWD}").first()[0]
    houses.land_held_batch()
    houses.dbt("run", "--select", "ods_client__events")  # a new load the backfill must leave

    run = houses.backfill(window["start"], window["end"])
    assert "backfill of 2 days" in run.log

    # the range equals a full rebuild with the new rule; shares are back, as the landing says
    for table in (DWD, *DWS):
        assert houses.rows(table, window["days"]) == houses.rows(
            table, window["days"], prefix=REFERENCE
        ), table
    shares = f"select count(*) from {PREFIX}{DWD} where event_type = 'share' and event_date in "
    assert houses.spark.sql(f"{shares} ({quoted(window['days'])})").first()[0] > 0

    # every other day: the very same rows in the very same files
    for table in (DWD, *DWS):
        assert houses.rows(table, outside) == old_outside[table], table
        after = houses.files(table)
        for day, files in window["files"][table].items():
            if day not in window["days"]:
                assert after[day] == files, (table, day)
            else:
                assert not after[day] & files, (table, day)
    # the new load stays for the schedule: no row of it was taken
    assert houses.spark.sql(f"select max(_load_id) from {PREFIX}{DWD}").first()[0] == watermark


def test_a_backfill_run_twice_equals_one_run(houses, window):
    every_day = houses.days()
    once = {table: houses.rows(table, every_day) for table in (DWD, *DWS)}
    houses.backfill(window["start"], window["end"])
    for table in (DWD, *DWS):
        assert houses.rows(table, every_day) == once[table], table
    duplicates = f"select count(*) - count(distinct event_id) from {PREFIX}{DWD}"
    assert houses.spark.sql(duplicates).first()[0] == 0


def test_a_day_left_without_rows_is_emptied_then_restored(houses, window):
    day = window["days"][0]
    next_day = window["days"][1]
    run = houses.backfill(day, next_day, rule=["no_such_type"])
    assert f"no row left for {day}" in run.log
    for table in (DWD, *DWS):
        assert houses.rows(table, [day]) == set(), table
    houses.backfill(day, next_day)
    for table in (DWD, *DWS):
        assert houses.rows(table, [day]) == houses.rows(table, [day], prefix=REFERENCE), table


def test_the_schedule_goes_on_after_a_backfill(houses, window):
    """The held batch (late events included) reaches DWD and DWS by the next scheduled run;
    the range then equals a full rebuild of every batch with the new rule."""
    houses.dbt("run", *BUILD)
    houses.dbt("run", *REFERENCE_BUILD, "--full-refresh", prefix=REFERENCE)
    newest = houses.spark.sql(f"select max(_load_id) from {PREFIX}{DWD}").first()[0]
    ods = houses.spark.sql(f"select max(_load_id) from {PREFIX}ods.ods_client__events").first()[0]
    assert newest == ods
    for table in (DWD, *DWS):
        assert houses.rows(table, window["days"]) == houses.rows(
            table, window["days"], prefix=REFERENCE
        ), table


def test_a_backfill_takes_whole_days_only(houses):
    run = houses.backfill("2026-01-02T06:00:00", "2026-01-03", expect_success=False)
    assert not run.success
    assert "is not a midnight" in run.log


@pytest.mark.parametrize(
    ("model", "rule", "newest_sql"),
    [
        ("dwd_client__events", {"column": "event_at", "keep_days": 3},
         f"select max(to_date(event_at)) from {PREFIX}{DWD}"),
        # the raw lines a backfill re-reads: ODS kept 31 days by when they were loaded
        ("ods_client__events", {"column": "_loaded_at", "keep_days": 31},
         f"select max(to_date(_loaded_at)) from {PREFIX}ods.ods_client__events"),
    ],
    ids=["its-own-days", "the-ods-lines-it-reads"],
)  # fmt: skip
def test_a_backfill_before_the_first_day_retention_keeps_is_refused(
    houses, window, model, rule, newest_sql
):
    """A day retention deletes cannot be recomputed, and a backfill writing it would bring its
    expired rows back: a range starting before the first day kept, by the model's own rule or
    by that of the ODS lines it reads, stops the run, naming the table, its rule and the day to
    start at, and no file changes."""
    newest = houses.spark.sql(newest_sql).first()[0]
    first_kept = newest - timedelta(days=rule["keep_days"] - 1)
    assert window["start"] < first_kept.isoformat()
    variables = {
        "schema_prefix": PREFIX,
        "event_types": NEW_RULE,
        "retention_overrides": {model: rule},
    }
    files = houses.files(DWD)
    flags = ["--event-time-start", window["start"], "--event-time-end", window["end"]]
    run = houses._dbt(
        ["run", *BACKFILL, *flags, "--vars", json.dumps(variables)],
        landing=houses.root / "landing",
        expect_success=False,
    )
    assert not run.success
    days = f"{rule['keep_days']} days of {rule['column']}"
    expected = f"{PREFIX}{model.split('_', 1)[0]}.{model} keeps its days from {first_kept} on"
    assert f"{expected} (retention: {days})" in run.log, run.log[-2000:]
    assert f"start the backfill at {first_kept}" in run.log, run.log[-2000:]
    assert houses.files(DWD) == files


UNFILTERED = """
{{ config(schema='scratch_backfill', partition_by=['day'], backfill_by='day') }}
select date'2026-01-01' + cast(id as int) as day, id * {{ var('round') }} as value from range(4)
"""


def test_a_model_that_ignores_the_range_still_replaces_only_its_days(spark, dbt, tmp_path):
    """A partition overwrite replaces every day it writes: the rows a model computes outside
    the range never reach it, so those days keep their files."""
    table = "scratch_backfill.unfiltered"
    project = write_scratch_project(tmp_path, {"unfiltered.sql": UNFILTERED})
    spark.sql(f"drop table if exists {table} purge")
    dbt(["run", "--project-dir", str(project), "--vars", "{round: 1}"])
    files = {r[0] for r in spark.sql(f"select file_path from {table}.files").collect()}
    flags = ["--event-time-start", "2026-01-02", "--event-time-end", "2026-01-03"]
    dbt(["run", "--project-dir", str(project), "--vars", "{round: 2}", *flags])
    rows = spark.sql(f"select cast(day as string), value from {table} order by day").collect()
    assert [tuple(r) for r in rows] == [
        ("2026-01-01", 0),
        ("2026-01-02", 2),
        ("2026-01-03", 2),
        ("2026-01-04", 3),
    ]
    after = {r[0] for r in spark.sql(f"select file_path from {table}.files").collect()}
    assert len(files - after) == 1  # the one day's file replaced, the three others kept
