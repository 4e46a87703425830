"""The maintenance macros on real Iceberg tables: what they emit, what they refuse, and
what they do to a table's files and snapshots."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from scripts.iceberg_java import IcebergTable

SCHEMA = "maint"


def compiled(dbt, expression: str) -> str:
    result = dbt(["compile", "--inline", expression, "--quiet"])
    return result.result.results[0].node.compiled_code


def compile_error(dbt, expression: str) -> str:
    result = dbt(["compile", "--inline", expression, "--quiet"], expect_success=False)
    assert not result.success
    return result.log


def maintain(dbt, table: str, policy: dict, partitioned: bool = False):
    return dbt(
        [
            "run-operation",
            "iceberg_maintain_table",
            "--args",
            json.dumps({"table": table, "policy": policy, "partitioned": partitioned}),
        ]
    )


def count(spark, sql: str) -> int:
    return spark.sql(sql).first()[0]


def new_table(spark, name: str, properties: str = "") -> str:
    spark.sql(f"create schema if not exists {SCHEMA}")
    spark.sql(f"drop table if exists {SCHEMA}.{name} purge")
    spark.sql(f"""create table {SCHEMA}.{name} (id int, user_id int, note string) using iceberg
                  tblproperties ('format-version' = '2' {properties})""")
    return f"{SCHEMA}.{name}"


# -- render ---------------------------------------------------------------------------------


RELATION = "api.Relation.create(schema='dwd', identifier='dwd_client__events')"


def test_sort_compaction_renders_a_sort_order_and_keeps_the_starting_sequence_number(dbt):
    sql = compiled(
        dbt,
        "{{ rewrite_data_files(" + RELATION + ", strategy='sort', "
        "sort_order=['user_id desc', 'video_id'], where='event_date >= \"2026-01-02\"', "
        "options={'target-file-size-bytes': 1048576}) }}",
    )
    assert "call spark_catalog.system.rewrite_data_files(" in sql
    assert "table => 'dwd.dwd_client__events'" in sql
    assert "sort_order => 'user_id DESC NULLS LAST, video_id ASC NULLS LAST'" in sql
    assert "'use-starting-sequence-number', 'true'" in sql
    assert "'target-file-size-bytes', '1048576'" in sql


def test_zorder_and_the_other_procedures_render(dbt):
    assert "sort_order => 'zorder(user_id, video_id)'" in compiled(
        dbt,
        "{{ rewrite_data_files("
        + RELATION
        + ", strategy='zorder', zorder_by=['user_id', 'video_id']) }}",
    )
    assert "rewrite_position_delete_files(" in compiled(
        dbt, "{{ rewrite_position_delete_files(" + RELATION + ", options={'rewrite-all': true}) }}"
    )
    assert "use_caching => false" in compiled(
        dbt, "{{ rewrite_manifests(" + RELATION + ", use_caching=false) }}"
    )
    orphan = compiled(
        dbt, "{{ remove_orphan_files(" + RELATION + ", older_than_hours=48, dry_run=true) }}"
    )
    assert "dry_run => true" in orphan and "older_than => timestamp '" in orphan


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("rewrite_data_files(RELATION, strategy='shuffle')", "unknown strategy 'shuffle'"),
        (
            "rewrite_data_files(RELATION, strategy='sort', sort_order=['user_id; drop table x'])",
            "is not a column identifier",
        ),
        ("rewrite_data_files(RELATION, strategy='sort')", "needs a sort_order"),
        (
            "rewrite_data_files(RELATION, options={'no-such-option': 1})",
            "unknown option 'no-such-option'",
        ),
        ("remove_orphan_files(RELATION, older_than_hours=1)", "older_than_hours must be >= 24"),
        (
            "expire_snapshots(RELATION, older_than_hours=0)",
            "older_than_hours must be a number >= 1",
        ),
        ("expire_snapshots(RELATION, retain_last=0)", "retain_last must be >= 1"),
        ("rewrite_data_files('dwd.some_table')", "take a relation"),
    ],
)
def test_invalid_input_fails_at_compile_time(dbt, expression, message):
    assert message in compile_error(dbt, "{{ " + expression.replace("RELATION", RELATION) + " }}")


# -- behaviour ------------------------------------------------------------------------------


def test_small_files_are_compacted_and_a_healthy_table_is_left_alone(spark, dbt):
    table = new_table(spark, "small_files")
    for i in range(12):
        spark.sql(f"insert into {table} values ({i}, {i % 3}, 'row {i}')")
    assert count(spark, f"select count(*) from {table}.data_files") == 12
    policy = {"rewrite_data_files": {"min_small_files": 5}}
    maintain(dbt, table, policy)
    assert count(spark, f"select count(*) from {table}.data_files") == 1
    assert count(spark, f"select count(*) from {table}") == 12
    snapshots = count(spark, f"select count(*) from {table}.snapshots")
    maintain(dbt, table, policy)  # healthy now: one metadata read, no new snapshot
    assert count(spark, f"select count(*) from {table}.snapshots") == snapshots


def files_per_user(spark, table: str) -> dict[int, int]:
    bounds = spark.sql(f"""select readable_metrics.user_id.lower_bound as lo,
                                  readable_metrics.user_id.upper_bound as hi
                           from {table}.data_files""").collect()
    users = range(1, 201)
    return {u: sum(1 for b in bounds if b.lo <= u <= b.hi) for u in users}


@pytest.mark.parametrize("strategy", ["binpack", "sort"])
def test_sort_compaction_puts_each_user_into_few_files(spark, dbt, strategy):
    table = new_table(spark, f"by_user_{strategy}")
    for batch in range(8):  # every batch holds every user, like a day of events
        spark.sql(f"""insert into {table}
                      select id, 1 + (id * 7919 + {batch}) % 200, repeat('x', 40)
                      from range({batch * 5000}, {(batch + 1) * 5000}) as t(id)""")
    policy = {
        "rewrite_data_files": {
            "strategy": strategy,
            "min_small_files": 2,
            "options": {"target-file-size-bytes": 100_000},
        }
    }
    if strategy == "sort":
        policy["rewrite_data_files"]["sort_order"] = ["user_id"]
    maintain(dbt, table, policy)
    files = count(spark, f"select count(*) from {table}.data_files")
    spread = files_per_user(spark, table)
    assert files >= 3 and count(spark, f"select count(*) from {table}") == 40_000
    if strategy == "sort":
        assert max(spread.values()) <= 2  # a point query on one user reads at most 2 files
    else:
        assert sum(spread.values()) / len(spread) > files / 2  # binpack: users everywhere


def test_expiry_keeps_time_travel_inside_the_window(spark, dbt):
    table = new_table(spark, "expiry")
    snapshot_ids = []
    for i in range(5):
        spark.sql(f"insert into {table} values ({i}, {i}, 'v')")
        snapshot_ids.append(
            count(
                spark,
                f"select snapshot_id from {table}.snapshots order by committed_at desc limit 1",
            )
        )
    maintain(
        dbt,
        table,
        {"expire_snapshots": {"older_than_hours": 0, "min_window_hours": 0, "retain_last": 2}},
    )
    live = {r[0] for r in spark.sql(f"select snapshot_id from {table}.snapshots").collect()}
    assert live == set(snapshot_ids[-2:])
    assert count(spark, f"select count(*) from {table} version as of {snapshot_ids[-2]}") == 4
    with pytest.raises(Exception, match="Cannot find snapshot"):
        spark.sql(f"select * from {table} version as of {snapshot_ids[0]}").collect()


def test_orphan_removal_deletes_only_old_unreferenced_files(spark, dbt):
    table = new_table(spark, "orphans")
    spark.sql(f"insert into {table} values (1, 1, 'a'), (2, 2, 'b')")
    location = Path(
        str(IcebergTable(spark, f"spark_catalog.{table}").load().location()).removeprefix("file:")
    )
    data = location / "data"
    old, recent = data / "orphan-old.parquet", data / "orphan-recent.parquet"
    for path in (old, recent):
        path.write_bytes(b"not referenced by any snapshot")
    three_days_ago = time.time() - 3 * 24 * 3600
    os.utime(old, (three_days_ago, three_days_ago))
    live = [
        Path(r[0].removeprefix("file:"))
        for r in spark.sql(f"select file_path from {table}.data_files").collect()
    ]
    for path in live:  # live files older than the window too: age alone must not matter
        os.utime(path, (three_days_ago, three_days_ago))
    maintain(dbt, table, {"remove_orphan_files": {"older_than_hours": 48}})
    assert not old.exists()
    assert recent.exists()
    assert all(path.exists() for path in live)
    assert count(spark, f"select count(*) from {table}") == 2


def test_position_delete_files_are_rewritten_when_the_policy_asks(spark, dbt):
    table = new_table(
        spark,
        "position_deletes",
        ", 'write.update.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read'",
    )
    for part in range(4):  # four data files
        spark.sql(
            f"insert into {table} select id, id % 10, 'v' "
            f"from range({part * 25}, {(part + 1) * 25}) as t(id)"
        )
    # Iceberg 1.10 keeps one position-delete file per data file (new deletes are merged
    # with the old), so one update per data file leaves four delete files
    for part in range(4):
        spark.sql(f"update {table} set note = 'u{part}' where id = {part * 25}")
    paths = f"select file_path from {table}.delete_files"
    before = {r[0] for r in spark.sql(paths).collect()}
    assert len(before) == 4
    maintain(
        dbt,
        table,
        {
            "rewrite_position_delete_files": {
                "min_delete_files": 2,
                "options": {"rewrite-all": True},
            }
        },
    )
    after = {r[0] for r in spark.sql(paths).collect()}
    # every delete file was rewritten; Spark's file-scoped deletes stay one per data file
    assert after and not (after & before) and len(after) <= len(before)
    last = spark.sql(f"select operation from {table}.snapshots order by committed_at desc limit 1")
    assert last.first()[0] == "replace"
    assert count(spark, f"select count(*) from {table} where note like 'u%'") == 4
    assert count(spark, f"select count(*) from {table}") == 100


def test_health_report_shows_a_compaction_before_and_after(spark, dbt, tmp_path):
    from scripts.health_report import write_report

    table = new_table(spark, "report")
    for i in range(6):
        spark.sql(f"insert into {table} values ({i}, {i}, 'r')")
    before = write_report(spark, [table], tmp_path / "before")
    maintain(dbt, table, {"rewrite_data_files": {"min_small_files": 5}})
    after = write_report(spark, [table], tmp_path / "after", before=before)
    assert before[table]["data_files"] == 6 and after[table]["data_files"] == 1
    assert before[table]["last_maintenance_at"] is None and after[table]["last_maintenance_at"]
    page = (tmp_path / "after" / "health.html").read_text()
    assert table in page and "6 &rarr; 1" in page
    png = (tmp_path / "after" / "health.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000


# -- conflicts ------------------------------------------------------------------------------


def _originals_after_first_group_commit(spark, table: str, original: set[str]) -> list[str]:
    """Wait (bounded) until the compaction's first file group commits, then return one
    original file of every partition whose group has not committed yet. Java API only (no
    Spark job), so the writer acts within milliseconds while the big groups still rewrite."""
    iceberg = IcebergTable(spark, f"spark_catalog.{table}")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        current = iceberg.load()
        current.refresh()
        if current.currentSnapshot().operation() == "replace":
            break
        time.sleep(0.01)
    else:
        raise AssertionError("the compaction never committed a file group")
    live = {str(f.location()) for f in iceberg.data_files(current.currentSnapshot().snapshotId())}
    by_partition: dict[str, str] = {}
    for path in sorted(live & original):
        by_partition.setdefault(path.split("/part=")[1].split("/")[0], path)
    return list(by_partition.values())


def test_a_writer_racing_the_compaction_costs_one_group_reported_as_conflict(spark, dbt):
    """A concurrent writer deletes data files while the compaction runs (what a
    copy-on-write DELETE does in metadata). Each file group holding such a file must lose
    its commit, the other groups must land, the log must say CONFLICT, the run must
    succeed, and no row may be lost or come back. A second run compacts what was left."""
    table = new_table(spark, "conflict")
    spark.sql(f"alter table {table} add column part int")
    spark.sql(f"alter table {table} add partition field part")
    # 6 small files in each of 4 partitions: 4 file groups. Partition 0 is tiny and is
    # rewritten first (bytes-asc), so the writer strikes while the big groups still run.
    for batch in range(6):
        spark.sql(f"""insert into {table}
                      select id, id % 500, repeat('x', 30),
                             case when id % 1000 = 0 then 0 else 1 + id % 3 end
                      from range({batch * 150_000}, {(batch + 1) * 150_000}) as t(id)""")
    original = {r[0] for r in spark.sql(f"select file_path from {table}.data_files").collect()}
    assert len(original) == 24
    rows_in = {
        r.file_path: r.record_count
        for r in spark.sql(f"select file_path, record_count from {table}.data_files").collect()
    }

    removed: list[str] = []

    def concurrent_writer() -> None:
        # a py4j thread has no active SparkSession: without one the catalog falls back to V1
        spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
        iceberg = IcebergTable(spark, f"spark_catalog.{table}")
        targets = _originals_after_first_group_commit(spark, table, original)
        iceberg.delete_data_files(targets)
        removed.extend(targets)

    policy = {
        "rewrite_data_files": {
            "min_small_files": 5,
            "options": {
                "max-concurrent-file-group-rewrites": 1,
                "partial-progress.max-commits": 4,
                "rewrite-job-order": "bytes-asc",
            },
        }
    }
    writer = threading.Thread(target=concurrent_writer)
    writer.start()
    run = maintain(dbt, table, policy, partitioned=True)
    writer.join(timeout=300)
    assert removed, "the concurrent writer never committed"
    line = next(m for m in run.log.splitlines() if m.startswith(f"maintenance {table}: data files"))
    assert "CONFLICT" in line, line
    expected_rows = sum(rows_in.values()) - sum(rows_in[path] for path in removed)
    assert count(spark, f"select count(*) from {table}") == expected_rows
    # the group that won was compacted; each group that lost keeps its other originals
    files_per_partition = {
        r.part: r.n
        for r in spark.sql(
            f"select partition.part, count(*) as n from {table}.data_files group by 1"
        ).collect()
    }
    assert files_per_partition[0] == 1
    losers = {int(path.split("/part=")[1].split("/")[0]) for path in removed}
    assert 0 not in losers and all(files_per_partition[part] == 5 for part in losers)

    retry = maintain(dbt, table, policy, partitioned=True)
    assert "CONFLICT" not in retry.log
    assert count(spark, f"select count(*) from {table}.data_files") == 4
    assert count(spark, f"select count(*) from {table}") == expected_rows
