"""Cleanup never destroys what is still needed, on real Iceberg tables: orphan removal
spares the files of a write that has not committed yet, and snapshot expiry keeps every
snapshot of the retention window readable with exactly its rows."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scripts.iceberg_java import IcebergTable

SCHEMA = "cleanup"


def maintain(dbt, table: str, policy: dict, expect_success: bool = True):
    return dbt(
        [
            "run-operation",
            "iceberg_maintain_table",
            "--args",
            json.dumps({"table": table, "policy": policy}),
        ],
        expect_success=expect_success,
    )


def new_table(spark, name: str, properties: str = "") -> str:
    spark.sql(f"create schema if not exists {SCHEMA}")
    spark.sql(f"drop table if exists {SCHEMA}.{name} purge")
    spark.sql(f"""create table {SCHEMA}.{name} (id int, note string) using iceberg
                  tblproperties ('format-version' = '2' {properties})""")
    return f"{SCHEMA}.{name}"


def rows(spark, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


def local_path(location: object) -> Path:
    return Path(str(location).removeprefix("file:"))


# -- orphan removal and a write in flight ------------------------------------------------------


def test_orphan_removal_spares_the_files_of_a_write_in_flight(spark, dbt):
    table = new_table(spark, "in_flight")
    spark.sql(f"insert into {table} values (1, 'committed'), (2, 'committed')")
    iceberg = IcebergTable(spark, f"spark_catalog.{table}")
    # a writer's state between writing its data file and committing it
    in_flight = iceberg.write_data_file([{"id": 3, "note": "in flight"}], prefix="in-flight")
    in_flight_path = local_path(in_flight.location())
    # and a genuine orphan, three days old, that removal must delete (so it did run)
    old_orphan = in_flight_path.with_name("old-orphan.parquet")
    old_orphan.write_bytes(b"left behind by a failed job")
    three_days_ago = time.time() - 3 * 24 * 3600
    os.utime(old_orphan, (three_days_ago, three_days_ago))

    # a window under the safe minimum is refused by the macro before any SQL runs
    refused = maintain(
        dbt, table, {"remove_orphan_files": {"older_than_hours": 0}}, expect_success=False
    )
    assert "remove_orphan_files: older_than_hours must be >= 24" in refused.log
    assert in_flight_path.exists() and old_orphan.exists()
    # the smallest allowed window
    maintain(dbt, table, {"remove_orphan_files": {"older_than_hours": 24}})
    assert not old_orphan.exists()
    assert in_flight_path.exists()

    iceberg.load().newAppend().appendFile(in_flight).commit()
    assert rows(spark, f"select * from {table}") == [
        (1, "committed"),
        (2, "committed"),
        (3, "in flight"),
    ]


def test_without_the_guard_orphan_removal_corrupts_the_in_flight_commit(spark):
    """Why the guard exists: removal with a window of zero deletes the in-flight file; the
    writer's commit still succeeds (Iceberg does not look at storage) and the table can no
    longer be read. Iceberg's procedure has a 24 h check of its own; its Action API (what
    its error message points to, and what jobs outside Spark SQL use) has none."""
    table = new_table(spark, "in_flight_unguarded")
    spark.sql(f"insert into {table} values (1, 'committed')")
    iceberg = IcebergTable(spark, f"spark_catalog.{table}")
    in_flight = iceberg.write_data_file([{"id": 2, "note": "in flight"}], prefix="in-flight")
    in_flight_path = local_path(in_flight.location())
    now = datetime.now(UTC) + timedelta(seconds=5)  # so the file just written is older
    with pytest.raises(Exception, match="interval less than 24 hours"):
        spark.sql(
            f"call spark_catalog.system.remove_orphan_files(table => '{table}', "
            f"older_than => timestamp '{now:%Y-%m-%d %H:%M:%S}')"  # session time zone: UTC
        )
    assert in_flight_path.exists()
    result = (
        spark._jvm.org.apache.iceberg.spark.actions.SparkActions.get(spark._jsparkSession)
        .deleteOrphanFiles(iceberg.load())
        .olderThan(int(now.timestamp() * 1000))
        .execute()
    )
    removed, locations = [], result.orphanFileLocations().iterator()
    while locations.hasNext():
        removed.append(str(locations.next()))
    assert str(in_flight.location()) in removed
    assert not in_flight_path.exists()

    iceberg.load().newAppend().appendFile(in_flight).commit()
    with pytest.raises(Exception, match=r"FileNotFoundException|NotFoundException"):
        spark.sql(f"select * from {table}").collect()
    spark.sql(f"drop table {table}")  # broken on purpose; purge would fail on the lost file


# -- snapshot expiry and time travel ------------------------------------------------------------


def test_expiry_keeps_every_snapshot_of_the_window_readable(spark, dbt):
    """Eight commits (inserts, merge-on-read update and delete, a compaction), four before a
    pause and four after. Expiry with the window at its allowed minimum and a cutoff in the
    pause: every surviving snapshot reads exactly its recorded rows, the others are gone."""
    table = new_table(
        spark,
        "history",
        ", 'write.update.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read'",
    )
    iceberg = IcebergTable(spark, f"spark_catalog.{table}")
    history: list[tuple[int, int, list[tuple]]] = []  # (snapshot id, committed ms, rows)

    def commit(sql: str) -> None:
        spark.sql(sql)
        snapshot = iceberg.current_snapshot()
        history.append(
            (
                snapshot.snapshotId(),
                snapshot.timestampMillis(),
                rows(spark, f"select * from {table}"),
            )
        )

    commit(f"insert into {table} values (1, 'a'), (2, 'b'), (3, 'c')")
    commit(f"insert into {table} values (4, 'd'), (5, 'e'), (6, 'f')")
    commit(f"update {table} set note = 'b2' where id = 2")
    commit(f"delete from {table} where id = 5")
    # the cutoff falls in this pause: 2 s after its start, plus the time the run-operation
    # takes to render it (1-2 s in pytest's warm process, a few on a slow busy machine)
    time.sleep(10)
    commit(f"insert into {table} values (7, 'g'), (8, 'h')")
    commit(f"update {table} set note = 'a2' where id = 1")
    commit(f"delete from {table} where id = 3")
    # the compaction leaves the earlier snapshots' files referenced by them alone
    commit(
        f"call spark_catalog.system.rewrite_data_files(table => '{table}', "
        "options => map('rewrite-all', 'true'))"
    )
    assert len({snapshot_id for snapshot_id, _, _ in history}) == 8
    assert len(history[-1][2]) == 6

    def window_hours() -> float:
        """A window whose cutoff lands 2 s after the 4th commit, i.e. inside the pause
        (the macro's own delay before it renders the cutoff only moves it later)."""
        cutoff_ms = history[3][1] + 2000
        return (time.time() * 1000 - cutoff_ms) / 3_600_000

    def expire(retain_last: int):
        hours = window_hours()
        policy = {
            "older_than_hours": hours,
            "min_window_hours": hours,
            "retain_last": retain_last,
            "slack_hours": 0,  # act as soon as a snapshot passes the window
        }
        return maintain(dbt, table, {"expire_snapshots": policy})

    def check(survivors: range) -> None:
        live = {r[0] for r in spark.sql(f"select snapshot_id from {table}.snapshots").collect()}
        assert live == {history[i][0] for i in survivors}
        for i, (snapshot_id, _, expected) in enumerate(history):
            if i in survivors:
                assert rows(spark, f"select * from {table} version as of {snapshot_id}") == expected
            else:
                with pytest.raises(Exception, match=f"Cannot find snapshot with ID {snapshot_id}"):
                    spark.sql(f"select * from {table} version as of {snapshot_id}").collect()

    # a window under the minimum is refused at compile time and changes nothing
    hours = window_hours()
    for policy, message in [
        ({"older_than_hours": hours / 2, "min_window_hours": hours}, f">= {hours}"),
        ({"older_than_hours": 0.5}, ">= 1.0"),  # the default minimum: 1 h
    ]:
        refused = maintain(dbt, table, {"expire_snapshots": policy}, expect_success=False)
        assert f"expire_snapshots: older_than_hours must be a number {message}" in refused.log
    check(range(8))

    # retain_last keeps the last six although two of them are older than the window
    expire(retain_last=6)
    check(range(2, 8))
    # the window keeps the last four although retain_last asks for only two
    expire(retain_last=2)
    check(range(4, 8))
