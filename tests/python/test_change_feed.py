"""The change feed: export-changes between two snapshots returns exactly the changes applied,
for a merge-on-read table (the dimensions' write mode) and a copy-on-write one (the facts'); a
compaction exports nothing; a consumer resuming from its last snapshot rebuilds the table, never
missing or doubling a change; an expired snapshot fails clearly.

Each table gets a scripted history. The expected changes and states come from the script's
own model of the table (a dict per key), never from reading the table back.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from scripts.export_changes import ExpiredSnapshot, current_snapshot, export, main

SCHEMA = "change_feed"


class History:
    """A table and the script's model of it: {user_id: (name, level)}."""

    def __init__(self, spark, mode: str) -> None:
        self.spark, self.table = spark, f"{SCHEMA}.users_{mode.replace('-', '_')}"
        spark.sql(f"create schema if not exists {SCHEMA}")
        spark.sql(f"drop table if exists {self.table} purge")
        spark.sql(f"""
            create table {self.table} (user_id bigint, name string, level int, day date)
            using iceberg partitioned by (day)
            tblproperties ('format-version' = '2', 'write.delete.mode' = '{mode}',
                           'write.update.mode' = '{mode}', 'write.merge.mode' = '{mode}')""")
        self.state: dict[int, tuple] = {}
        self.snapshots: list[int] = []

    def commit(self, statement: str) -> int:
        self.spark.sql(statement)
        self.snapshots.append(current_snapshot(self.spark, self.table))
        return self.snapshots[-1]

    def insert(self, rows: dict[int, tuple]) -> set:
        values = ", ".join(
            f"({k}, '{n}', {lvl}, date'2026-01-0{k % 3 + 1}')" for k, (n, lvl) in rows.items()
        )
        self.commit(f"insert into {self.table} values {values}")
        self.state.update(rows)
        return {("insert", k, *v) for k, v in rows.items()}

    def merge(self, upserts: dict[int, tuple], deletes: set[int]) -> set:
        """One MERGE: updates and inserts by key, deletes flagged in the source."""
        source = [f"({k}, '{n}', {lvl}, false)" for k, (n, lvl) in upserts.items()]
        source += [f"({k}, '', 0, true)" for k in deletes]
        self.commit(f"""
            merge into {self.table} t
            using (select col1 as user_id, col2 as name, col3 as level, col4 as gone
                   from values {", ".join(source)}) s
            on t.user_id = s.user_id
            when matched and s.gone then delete
            when matched then update set name = s.name, level = s.level
            when not matched and not s.gone then insert
                (user_id, name, level, day)
                values (s.user_id, s.name, s.level,
                        date'2026-01-01' + cast(s.user_id % 3 as int))""")
        expected = set()
        for k, v in upserts.items():
            if k in self.state:
                if self.state[k] != v:
                    expected |= {("update_before", k, *self.state[k]), ("update_after", k, *v)}
            else:
                expected.add(("insert", k, *v))
            self.state[k] = v
        for k in deletes:
            expected.add(("delete", k, *self.state.pop(k)))
        return expected

    def compact(self) -> None:
        self.commit(
            f"call spark_catalog.system.rewrite_data_files(table => '{self.table}', "
            "options => map('rewrite-all', 'true', 'remove-dangling-deletes', 'true'))"
        )


def exported(spark, table: str, tmp_path, start, end, changed_files=False) -> list[tuple]:
    """The exported changes in the file's order."""
    out = tmp_path / f"{start}-{end}-{changed_files}.jsonl"
    export(spark, table, ["user_id"], out, start, end, changed_files=changed_files)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    return [(r["_change_type"], r["user_id"], r["name"], r["level"]) for r in lines]


@pytest.fixture(params=["merge-on-read", "copy-on-write"])
def history(request, spark) -> History:
    return History(spark, request.param)


def test_changes_between_snapshots_are_exactly_those_applied(spark, history, tmp_path):
    first = history.insert({k: (f"user{k}", 1) for k in range(1, 21)})
    start = history.snapshots[-1]
    applied = history.merge(
        {2: ("renamed", 1), 3: ("user3", 5), 4: ("user4", 1), 30: ("new", 1)}, deletes={5, 6}
    )
    assert len(applied) == 7  # 4 is a no-op update: it changed nothing, so exports nothing
    assert set(exported(spark, history.table, tmp_path, start, history.snapshots[-1])) == applied
    assert set(exported(spark, history.table, tmp_path, None, start)) == first


def test_a_compaction_exports_nothing(spark, history, tmp_path):
    history.insert({k: (f"user{k}", 1) for k in range(1, 11)})
    history.merge({1: ("changed", 2)}, deletes={2})
    before = history.snapshots[-1]
    history.compact()
    assert history.snapshots[-1] != before
    assert exported(spark, history.table, tmp_path, before, history.snapshots[-1]) == []


def test_a_resuming_consumer_rebuilds_the_table(spark, history, tmp_path):
    """Export after every commit, a compaction among them, and replay the stream."""
    history.insert({k: (f"user{k}", 1) for k in range(1, 16)})
    history.merge({1: ("a", 2), 16: ("b", 1)}, deletes={3})
    history.compact()
    history.merge({1: ("c", 3), 4: ("d", 1)}, deletes={16, 7})
    spark.sql(f"delete from {history.table} where user_id = 8")
    history.snapshots.append(current_snapshot(spark, history.table))
    history.state.pop(8)

    replica: dict[int, tuple] = {}
    resume_from = None
    for end in history.snapshots:
        for kind, key, name, level in exported(spark, history.table, tmp_path, resume_from, end):
            if kind in ("insert", "update_after"):
                assert key not in replica or kind == "update_after", (kind, key)
                replica[key] = (name, level)
            elif kind == "delete":
                assert replica.pop(key) == (name, level)
            else:
                assert replica[key] == (name, level)  # the before image is what it held
        resume_from = end
    assert replica == history.state


def test_an_expired_snapshot_fails_clearly(spark, history, tmp_path):
    history.insert({1: ("one", 1)})
    history.merge({1: ("uno", 1)}, deletes=set())
    expired = history.snapshots[0]
    later = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M:%S")
    spark.sql(  # procedures take literals only
        f"call spark_catalog.system.expire_snapshots(table => '{history.table}', "
        f"older_than => timestamp'{later}', retain_last => 1)"
    )
    with pytest.raises(ExpiredSnapshot, match="no longer in its history"):
        export(spark, history.table, ["user_id"], tmp_path / "x.jsonl", expired, None)


def test_the_command_prints_where_to_resume(spark, tmp_path, capsys):
    history = History(spark, "merge-on-read")
    history.insert({1: ("one", 1), 2: ("two", 2)})
    state = tmp_path / "state"
    args = ["--table", history.table, "--key", "user_id", "--target", "ci"]
    assert main([*args, "--out", str(tmp_path / "all.jsonl"), "--state", str(state)]) == 0
    assert f"resume from snapshot {history.snapshots[-1]}" in capsys.readouterr().out
    assert state.read_text().strip() == str(history.snapshots[-1])
    assert main([*args, "--out", str(tmp_path / "x.jsonl"), "--from-snapshot", "1"]) == 2


def test_a_copy_on_write_table_exports_from_its_changed_files(spark, tmp_path):
    """--changed-files: Iceberg's changelog scan of the commits between two snapshots (only
    the files they removed and added): the changes applied, nothing for a compaction, and a
    consumer resuming over several commits (a compaction among them) rebuilds the table."""
    history = History(spark, "copy-on-write")
    history.insert({k: (f"user{k}", 1) for k in range(1, 21)})
    start = history.snapshots[-1]
    applied = history.merge(
        {2: ("renamed", 1), 3: ("user3", 5), 4: ("user4", 1), 30: ("new", 1)}, deletes={5, 6}
    )
    end = history.snapshots[-1]
    assert set(exported(spark, history.table, tmp_path, start, end, changed_files=True)) == applied
    history.compact()
    assert exported(spark, history.table, tmp_path, end, history.snapshots[-1], True) == []

    replica = {k: (f"user{k}", 1) for k in range(1, 21)}
    history.merge({1: ("a", 2), 16: ("b", 1)}, deletes={3})
    history.compact()
    history.merge({1: ("c", 3), 4: ("d", 1)}, deletes={16, 7})
    for kind, key, name, level in exported(
        spark, history.table, tmp_path, start, history.snapshots[-1], changed_files=True
    ):
        if kind in ("insert", "update_after"):
            replica[key] = (name, level)
        else:
            assert replica.pop(key) == (name, level), (kind, key)
    assert replica == history.state


def test_changed_files_refuse_a_merge_on_read_table_clearly(spark, tmp_path):
    history = History(spark, "merge-on-read")
    history.insert({k: (f"user{k}", 1) for k in range(1, 6)})
    start = history.snapshots[-1]
    history.merge({1: ("one", 2)}, deletes={2})
    with pytest.raises(ValueError, match=r"delete files .* without --changed-files"):
        exported(spark, history.table, tmp_path, start, history.snapshots[-1], True)
