"""The run lock's commit (lakehouse.RunLock, called by acquire_run_lock and release_run_lock)
on a real Iceberg table in pytest's session: of runs racing for a free lock exactly one takes
it, a held lock is refused and released only by its holder, a lease that ended is taken
over, and every acquisition hands out the next load id."""

from __future__ import annotations

import json
import threading

import pytest
from pyspark.sql import SparkSession

LOCK = "run_lock_test.run_lock"
RACERS, ROUNDS = 4, 5


def call(spark: SparkSession, method: str, *arguments: str | int) -> dict:
    rendered = [f"cast({a} as bigint)" if isinstance(a, int) else f"'{a}'" for a in arguments]
    sql = ", ".join([f"'{method}'", f"'{LOCK}'", *rendered])
    return json.loads(
        spark.sql(f"select reflect('lakehouse.RunLock', {sql}) from values (1)").first()[0]
    )


@pytest.fixture
def lock(spark: SparkSession) -> str:
    """A fresh lock table, made as acquire_run_lock makes it (one row from its first commit)."""
    spark.sql("create schema if not exists run_lock_test")
    spark.sql(f"drop table if exists {LOCK}")
    spark.sql(
        f"create table {LOCK} using iceberg tblproperties ('format-version' = '2')"
        " as select 'warehouse' as lock_name, cast(null as string) as holder,"
        " cast(null as string) as holder_process, cast(0 as bigint) as load_id,"
        " cast(null as timestamp) as acquired_at, cast(null as timestamp) as expires_at"
    )
    return LOCK


def test_of_runs_racing_for_a_free_lock_exactly_one_takes_it(spark: SparkSession, lock: str):
    contended = 0
    for round_ in range(1, ROUNDS + 1):
        start = threading.Barrier(RACERS)
        answers: dict[str, dict] = {}

        def race(invocation: str, start=start, answers=answers) -> None:
            start.wait()
            try:
                answers[invocation] = call(spark, "acquire", invocation, 180)
            except Exception as error:  # kept for the assertion's message
                answers[invocation] = {"holder": None, "error": str(error)[:500]}

        racers = [threading.Thread(target=race, args=(f"{round_:04d}-{n}",)) for n in range(RACERS)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join()
        winners = {a["holder"] for a in answers.values()}
        assert len(winners) == 1, answers  # every racer read one holder after its try
        [winner] = winners
        assert winner in answers and answers[winner]["load_id"] == round_, answers
        contended += sum(a["lost_race"] for a in answers.values())
        rows = spark.sql(f"select holder, load_id from {lock}").collect()
        assert [tuple(r) for r in rows] == [(winner, round_)]
        assert call(spark, "release", winner)["released"]
    # the races were real: some racers read a free lock and lost the commit
    assert contended > 0


def test_a_held_lock_is_refused_and_released_only_by_its_holder(spark: SparkSession, lock: str):
    held = call(spark, "acquire", "aaaa-1", 180)
    assert (held["holder"], held["load_id"], held["taken_over"]) == ("aaaa-1", 1, None)
    refused = call(spark, "acquire", "bbbb-2", 180)
    assert (refused["holder"], refused["load_id"], refused["lost_race"]) == ("aaaa-1", 1, False)
    assert not call(spark, "release", "bbbb-2")["released"]
    assert call(spark, "state")["holder"] == "aaaa-1"
    released = call(spark, "release", "aaaa-1")
    assert released["released"] and released["holder"] is None and released["load_id"] == 1
    assert call(spark, "acquire", "bbbb-2", 180)["load_id"] == 2


def test_a_lease_that_ended_is_taken_over_naming_its_holder(spark: SparkSession, lock: str):
    first = call(spark, "acquire", "aaaa-1", 0)  # a lease of 0 minutes: over at once
    taken = call(spark, "acquire", "bbbb-2", 180)
    assert (taken["holder"], taken["load_id"]) == ("bbbb-2", 2)
    assert taken["taken_over"] == {
        "holder": "aaaa-1",
        "load_id": 1,
        "acquired_at": first["acquired_at"],
        "why": "its lease ended",
    }


def test_a_missing_lock_table_is_reported_not_raised(spark: SparkSession):
    spark.sql("create schema if not exists run_lock_test")
    spark.sql(f"drop table if exists {LOCK}")
    assert call(spark, "state") == {"missing": True}
    assert call(spark, "acquire", "aaaa-1", 180) == {"missing": True}
