"""A dimension keeps, per key, the last applied change (deletes as tombstones) and compares
each new change with it, so it never re-reads the change history.

A warehouse of its own (var schema_prefix) holds the users' changelog of two generated
batches; then each test lands one hand-written batch of `users` changes and runs the state
model and its changelog model (dim_users__changes); changes of different users may share a
batch and its run (the stale change and the zombie). The tests run in file order:
each builds on the state the previous one left; the last ones replay the changelog.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from iceberg_scans import data_files, files_per_scan

from scripts.export_changes import changelog_rows, current_snapshot, export, export_changelog
from scripts.generate_landing import LandingGenerator, Scale

PREFIX = "dimstate_"
SEED = 43
SCALE = Scale(users=120, videos=30, events_per_batch=200, batches=2, min_changes_per_batch=8)
STATE = f"{PREFIX}dwd.dim_users__state"
VIEW = f"{PREFIX}dwd.dim_users"
ODS = f"spark_catalog.{PREFIX}ods.ods_appdb__user_changes"
CHANGES = f"{PREFIX}dwd.dim_users__changes"
SELECT = ["+dim_users", "dim_users__changes"]
# the tests land users' changes only: after the first run, the other sources' ODS models (the
# typed rows read their tables) would each list and load nothing, a few seconds a run
OTHER_SOURCES = ["--exclude", "ods_client__events", "ods_appdb__video_changes"]


class StateWarehouse:
    def __init__(self, root: Path, dbt, spark) -> None:
        self.root, self._dbt, self.spark = root, dbt, spark
        self.vars = json.dumps({"schema_prefix": PREFIX})
        self.batch = SCALE.batches
        self.offset = 10_000_000  # above every generated Kafka offset: never a redelivery

    def dbt(self, *args: str):
        return self._dbt([*args, "--vars", self.vars], landing=self.root / "landing")

    def run(self, *, every_source: bool = False):
        return self.dbt("run", "--select", *SELECT, *([] if every_source else OTHER_SOURCES))

    def land_changes(self, *changes: dict) -> None:
        """One new batch folder of `users` changes, complete (`_SUCCESS`)."""
        self.batch += 1
        folder = self.root / "landing" / "appdb_users" / f"batch={self.batch:06d}"
        folder.mkdir(parents=True)
        lines = []
        for change in changes:
            self.offset += 1
            arrival = {"_kafka_partition": 0, "_kafka_offset": self.offset}
            lines.append(json.dumps({**change, **arrival}))
        (folder / "part-00000.jsonl").write_text("\n".join(lines) + "\n")
        (folder / "_SUCCESS").write_text("")

    def row(self, user_id: int):
        return self.spark.sql(f"select * from {STATE} where user_id = {user_id}").first()

    def live(self, user_id: int) -> bool:
        query = f"select count(*) from {VIEW} where user_id = {user_id}"
        return self.spark.sql(query).first()[0] == 1

    def snapshots(self) -> int:
        return self.spark.sql(f"select count(*) from {STATE}.snapshots").first()[0]

    def live_users(self, count: int) -> list:
        """`count` live users, highest log position first."""
        return self.spark.sql(
            f"select * from {STATE} where not _is_deleted order by _source_lsn desc limit {count}"
        ).collect()


def change(row, op: str, lsn: int, committed_at: str | None = None, **values):
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return {
        "op": op,
        "user_id": row.user_id,
        "user_name": values.get("user_name", row.user_name),
        "region": row.region,
        "is_creator": row.is_creator,
        "level": row.user_level,
        "registered_at": "2025-01-01T00:00:00.000Z",
        "_source_lsn": lsn,
        "_source_committed_at": committed_at or now,
    }


@pytest.fixture(scope="module")
def warehouse(dbt, spark, data_dir) -> StateWarehouse:
    built = StateWarehouse(data_dir / "dimstate", dbt, spark)
    LandingGenerator(built.root, SEED, SCALE).run(log=lambda _: None)
    built.run(every_source=True)
    return built


@pytest.fixture(scope="module")
def users(warehouse) -> dict:
    """Three live users the tests change, by role."""
    deleted, stale, old_delete = warehouse.live_users(3)
    return {"deleted": deleted, "stale": stale, "old_delete": old_delete}


def test_a_load_of_only_deletes_leaves_tombstones(warehouse, users):
    deleted, old = users["deleted"], users["old_delete"]
    top = warehouse.spark.sql(f"select max(_source_lsn) from {STATE}").first()[0]
    warehouse.land_changes(
        change(deleted, "-D", top + 10),
        change(old, "-D", top + 11, committed_at="2020-01-01T00:00:00.000Z"),
    )
    warehouse.run()
    tombstone = warehouse.row(deleted.user_id)
    assert tombstone._is_deleted and tombstone._source_lsn == top + 10
    assert not warehouse.live(deleted.user_id) and not warehouse.live(old.user_id)


def test_a_stale_change_loses_and_each_load_is_compared_once(warehouse, users):
    stale, deleted = users["stale"], users["deleted"]
    before = warehouse.row(stale.user_id)
    tombstone = warehouse.row(deleted.user_id)
    # the zombie of the next test rides along: another user, so one run applies both
    # (and the run below, that commits nothing, shows it too is compared once)
    warehouse.land_changes(
        change(stale, "+U", before._source_lsn - 1, user_name="stale name"),
        change(deleted, "+U", tombstone._source_lsn - 1, user_name="zombie"),
    )
    warehouse.run()
    after = warehouse.row(stale.user_id)
    assert after.user_name == before.user_name and after._source_lsn == before._source_lsn
    new_load = warehouse.spark.sql(f"select max(_load_id) from {ODS}").first()[0]
    assert after._checked_load_id == new_load > before._checked_load_id

    # no new change: neither this load nor the deletes' before it is merged again
    snapshots = warehouse.snapshots()
    run = warehouse.run()
    assert "nothing merged" in run.log
    assert warehouse.snapshots() == snapshots


def test_a_zombie_change_older_than_the_delete_stays_deleted(warehouse, users):
    """The zombie (an update older than the tombstone) landed and ran with the stale change."""
    deleted = users["deleted"]
    assert warehouse.row(deleted.user_id)._is_deleted
    assert not warehouse.live(deleted.user_id)


def test_a_reinsert_after_the_delete_restores_the_key(warehouse, users):
    deleted = users["deleted"]
    tombstone = warehouse.row(deleted.user_id)
    warehouse.land_changes(change(deleted, "+I", tombstone._source_lsn + 1, user_name="back"))
    warehouse.run()
    assert warehouse.live(deleted.user_id)
    assert warehouse.row(deleted.user_id).user_name == "back"


def test_a_run_reads_only_the_new_load_of_the_changelog(warehouse, users):
    stale = users["stale"]
    # the history in one file first: the ODS run's own compaction (at a count of small files
    # the loads above reach or not) must not fold the new load into the history it counts
    warehouse.spark.sql(
        f"call spark_catalog.system.rewrite_data_files("
        f"table => '{ODS.removeprefix('spark_catalog.')}', options => map('rewrite-all', 'true'))"
    )
    top = warehouse.spark.sql(f"select max(_source_lsn) from {STATE}").first()[0]
    warehouse.land_changes(change(stale, "+U", top + 1, user_name="newest"))
    ods_files_before = data_files(warehouse.spark, ODS)
    warehouse.dbt("run", "--select", "ods_appdb__user_changes")
    new_files = data_files(warehouse.spark, ODS) - ods_files_before
    assert new_files > 0

    run = warehouse.dbt("compile", "--select", "dim_users__state")
    (node,) = [r.node for r in run.result.results if r.node.name == "dim_users__state"]
    scans = files_per_scan(warehouse.spark, node.compiled_code)
    assert scans[ODS] and all(files == new_files for files in scans[ODS]), scans  # not history
    assert data_files(warehouse.spark, ODS) > new_files


def test_tombstones_past_their_retention_are_dropped(warehouse, users):
    old, recent = users["old_delete"], users["deleted"]
    warehouse.land_changes(change(recent, "-D", 10**9))  # a recent tombstone again
    warehouse.run()
    older = "_is_deleted and _source_committed_at < current_timestamp() - interval 30 days"
    expired = warehouse.spark.sql(f"select count(*) from {STATE} where {older}").first()[0]
    live = warehouse.spark.sql(f"select count(*) from {VIEW}").first()[0]
    assert expired >= 1  # the 2020 delete at least
    run = warehouse.dbt(
        "run-operation", "expire_dimension_tombstones", "--args", "{retention_days: 30}"
    )
    assert f"tombstones {STATE}: {expired} older than 30 days dropped" in run.log
    assert warehouse.row(old.user_id) is None
    assert warehouse.row(recent.user_id)._is_deleted  # deleted today: kept
    assert warehouse.spark.sql(f"select count(*) from {STATE} where {older}").first()[0] == 0
    assert warehouse.spark.sql(f"select count(*) from {VIEW}").first()[0] == live


# -- the changelog ------------------------------------------------------------------------------


def dimension(spark) -> dict:
    """dim_users as a consumer sees rows: {user_id: row as JSON values}."""
    rows = spark.table(VIEW).collect()
    return {r.user_id: json.loads(json.dumps(r.asDict(), default=str)) for r in rows}


class Consumer:
    """A downstream replica fed by `export-changes --changelog`, resuming from the changelog
    snapshot it exported last; every before image must be what it holds."""

    def __init__(self, root: Path) -> None:
        self.root, self.rows, self.snapshot, self.exports = root, {}, None, 0

    def catch_up(self, spark) -> list[tuple[str, int]]:
        self.exports += 1
        out = self.root / f"export-{self.exports}.jsonl"
        self.snapshot, _ = export_changelog(spark, CHANGES, out, self.snapshot)
        applied = []
        for line in out.read_text().splitlines():
            change = json.loads(line)
            kind, key = change["_change_type"], change["user_id"]
            image = {k: v for k, v in change.items() if k in IMAGE}
            if kind in ("delete", "update_before"):
                held = self.rows.pop(key) if kind == "delete" else self.rows[key]
                assert held == image, (kind, key)
            else:
                assert (key in self.rows) == (kind == "update_after"), (kind, key)
                self.rows[key] = image
            applied.append((kind, key))
        return applied


IMAGE = {
    "user_id", "user_name", "region", "is_creator", "user_level", "registered_at",
    "_change_op", "_source_lsn", "_source_committed_at", "_load_id", "_loaded_at",
}  # fmt: skip


@pytest.fixture(scope="module")
def consumer(warehouse, tmp_path_factory) -> Consumer:
    return Consumer(tmp_path_factory.mktemp("changelog-consumer"))


def test_the_changelog_replayed_from_the_start_is_the_dimension(warehouse, consumer):
    """Every test above changed the state (deletes, a stale change, a zombie, a re-insert,
    tombstone expiry): the changelog's replay is the dimension, key for key, column for
    column."""
    assert set(dimension(warehouse.spark)) & IMAGE == set()  # keys, not columns
    assert set(next(iter(dimension(warehouse.spark).values()))) == IMAGE
    consumer.catch_up(warehouse.spark)
    assert consumer.rows == dimension(warehouse.spark)
    assert len(consumer.rows) > 50


def test_one_update_is_one_before_and_one_after_read_from_the_new_files_only(
    warehouse, consumer, tmp_path
):
    """One landed update, in the state's change feed (export-changes on the merge-on-read
    dimension, across the run's maintenance commits) and in the changelog (read from the file
    the run appended only): one before and one after image each."""
    spark = warehouse.spark
    (target,) = warehouse.live_users(1)
    top = spark.sql(f"select max(_source_lsn) from {STATE}").first()[0]
    state_before = current_snapshot(spark, STATE)
    start = current_snapshot(spark, CHANGES)
    files = f"select file_path from {CHANGES}.files"
    files_before = {r[0] for r in spark.sql(files).collect()}
    warehouse.land_changes(change(target, "+U", top + 1, user_name="changelogged"))
    warehouse.run()
    out = tmp_path / "changes.jsonl"
    export(spark, STATE, ["user_id"], out, state_before, current_snapshot(spark, STATE))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["_change_type"], r["user_id"], r["user_name"]) for r in lines] == [
        ("update_before", target.user_id, target.user_name),
        ("update_after", target.user_id, "changelogged"),
    ]
    end = current_snapshot(spark, CHANGES)
    # the export reads only the file this run appended, not the changelog's history
    # (the run's maintenance may compact the changelog after: its files are not `added`)
    read = [r[0] for r in changelog_rows(spark, CHANGES, start, end).select("_file").collect()]
    assert len(read) == 2 and set(read).isdisjoint(files_before) and files_before, read
    assert consumer.catch_up(spark) == [
        ("update_before", target.user_id),
        ("update_after", target.user_id),
    ]
    assert consumer.rows[target.user_id]["user_name"] == "changelogged"
    assert consumer.rows == dimension(spark)


def test_a_compaction_and_a_run_without_changes_record_nothing(warehouse, consumer):
    spark = warehouse.spark
    for table in (STATE, CHANGES):
        spark.sql(
            f"call spark_catalog.system.rewrite_data_files(table => '{table}', "
            "options => map('rewrite-all', 'true', 'remove-dangling-deletes', 'true'))"
        )
    # no batch landed: only the two models the compaction touched, ODS has nothing to load
    warehouse.dbt("run", "--select", "dim_users__state", "dim_users__changes")
    assert consumer.catch_up(spark) == []
    assert consumer.rows == dimension(spark)


def test_changes_that_lose_record_nothing(warehouse, consumer):
    """Stale changes (older than the state's rows) touch their keys (the state compares them:
    its watermark moves) but change no row: the changelog's run compares those keys and
    records nothing. (A change that wins records its row even when only its source position
    and load moved: the dimension's row is what the changelog follows.)"""
    spark = warehouse.spark
    first, second = warehouse.live_users(2)
    checked = spark.sql(f"select max(_checked_load_id) from {STATE}").first()[0]
    warehouse.land_changes(
        change(first, "+U", first._source_lsn - 1, user_name="stale"),
        change(second, "-D", second._source_lsn - 1),
    )
    run = warehouse.run()
    assert spark.sql(f"select max(_checked_load_id) from {STATE}").first()[0] > checked
    assert "(ancestor)" in run.log  # compared, not skipped
    assert consumer.catch_up(spark) == []
    assert consumer.rows == dimension(spark)


def test_an_expired_state_snapshot_is_compared_with_the_replay(warehouse, consumer):
    """The state snapshot the changelog recorded last is gone (compacted past, then expired):
    the next run compares the whole state with the changelog's own replay, and still records
    exactly the one change landed."""
    spark = warehouse.spark
    spark.sql(
        f"call spark_catalog.system.rewrite_data_files(table => '{STATE}', "
        "options => map('rewrite-all', 'true'))"
    )
    later = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M:%S")
    spark.sql(
        f"call spark_catalog.system.expire_snapshots(table => '{STATE}', "
        f"older_than => timestamp'{later}', retain_last => 1)"
    )
    (target,) = warehouse.live_users(1)
    top = spark.sql(f"select max(_source_lsn) from {STATE}").first()[0]
    warehouse.land_changes(change(target, "-D", top + 1))
    run = warehouse.run()
    assert f"{CHANGES.split('.')[-1]}: changes of" in run.log and "(rebuilt)" in run.log
    assert consumer.catch_up(spark) == [("delete", target.user_id)]
    assert consumer.rows == dimension(spark)


def test_a_full_refresh_of_the_state_records_what_it_changed(warehouse, users, consumer):
    """The 2020 delete's tombstone was expired above, so a change older than that delete
    brings its user back (a documented limit of the retention); a full refresh rebuilds the
    state from the whole changelog, where the delete wins again. The changelog, never rebuilt
    itself, records exactly that delete."""
    spark = warehouse.spark
    old = users["old_delete"]
    assert warehouse.row(old.user_id) is None  # its tombstone expired
    warehouse.land_changes(change(old, "+U", old._source_lsn + 1, user_name="zombie after expiry"))
    warehouse.run()
    assert consumer.catch_up(spark) == [("insert", old.user_id)]
    seq = spark.sql(f"select max(_change_seq) from {CHANGES}").first()[0]

    warehouse.dbt("run", "--full-refresh", "--select", "dim_users__state", "dim_users__changes")
    assert not warehouse.live(old.user_id)
    assert consumer.catch_up(spark) == [("delete", old.user_id)]
    assert consumer.rows == dimension(spark)
    assert spark.sql(f"select min(_change_seq), max(_change_seq) from {CHANGES}").first() == (
        1,
        seq + 1,
    )
    fresh = Consumer(consumer.root / "fresh")
    fresh.catch_up(spark)
    assert fresh.rows == dimension(spark)
