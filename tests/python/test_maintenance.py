"""The maintenance macros on real Iceberg tables: what they emit, what they refuse, and
what they do to a table's files and snapshots."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from datetime import timedelta
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


def maintain(dbt, table: str, policy: dict, **args):
    return dbt(
        [
            "run-operation",
            "iceberg_maintain_table",
            "--args",
            json.dumps({"table": table, "policy": policy, **args}),
        ]
    )


def line_of(run, table: str) -> str:
    """The maintenance log line of one table in a dbt run."""
    return next(m for m in run.log.splitlines() if m.startswith(f"maintenance {table}: data files"))


def acted(run, table: str, step: str) -> bool:
    line = line_of(run, table)
    assert step in line, line
    return f"{step} skipped" not in line and f"{step} FAILED" not in line


def count(spark, sql: str) -> int:
    return spark.sql(sql).first()[0]


def local_path(location: object) -> Path:
    return Path(str(location).removeprefix("file:"))


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
    # the expiry cutoff keeps its microseconds: cut to the second, it spared the snapshots of
    # its last second that the decision had counted, and the next run expired again
    expire = compiled(
        dbt,
        "{{ expire_snapshots("
        + RELATION
        + ", older_than_hours=0, min_window_hours=0, retain_last=1) }}",
    )
    microseconds = r"older_than => timestamp '\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}'"
    assert re.search(microseconds, expire), expire


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
    again = maintain(dbt, table, policy)  # healthy now: no procedure, no new snapshot
    assert "rewrite_data_files skipped" in line_of(again, table)
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
        {
            "expire_snapshots": {
                "older_than_hours": 0,
                "min_window_hours": 0,
                "retain_last": 2,
                "slack_hours": 0,
            }
        },
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


def test_one_position_delete_file_per_data_file_is_not_rewritten(spark, dbt):
    """Spark's file-scoped deletes keep one delete file per data file: rewriting them would
    produce the same files again on every run (the old trigger counted delete files in the
    table). Only surplus files count; test_surplus_... shows a surplus merged."""
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
    for part in range(4):  # one update per data file: four delete files
        spark.sql(f"update {table} set note = 'u{part}' where id = {part * 25}")
    paths = f"select file_path from {table}.delete_files"
    before = {r[0] for r in spark.sql(paths).collect()}
    assert len(before) == 4
    run = maintain(dbt, table, {"rewrite_position_delete_files": {"min_delete_files": 2}})
    assert "rewrite_position_delete_files skipped (0 surplus < 2" in line_of(run, table)
    assert {r[0] for r in spark.sql(paths).collect()} == before


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
    run = maintain(dbt, table, policy)
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

    retry = maintain(dbt, table, policy)
    assert "CONFLICT" not in retry.log
    assert count(spark, f"select count(*) from {table}.data_files") == 4
    assert count(spark, f"select count(*) from {table}") == expected_rows


# -- triggers: the first run acts, the second finds the table healthy -----------------------


def mor_table(spark, name: str, properties: str = "") -> str:
    return new_table(
        spark,
        name,
        ", 'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', "
        "'write.merge.mode' = 'merge-on-read'" + properties,
    )


def insert_batches(spark, table: str, batches: int, rows: int = 25) -> None:
    for part in range(batches):
        spark.sql(
            f"insert into {table} select id, id % 10, 'v' "
            f"from range({part * rows}, {(part + 1) * rows}, 1, 1) as t(id)"  # one file
        )


def snapshots_of(spark, table: str) -> int:
    return count(spark, f"select count(*) from {table}.snapshots")


def test_a_healthy_post_hook_decision_reads_only_the_snapshot_summary(spark, dbt):
    """Without `nightly` the files and manifests are read only when the snapshots committed
    since the last full read could have crowded a partition (or there is no checkpoint)."""
    table = new_table(spark, "cheap_decision")
    policy = {"rewrite_data_files": {"min_small_files": 5}}
    insert_batches(spark, table, 2)
    first = maintain(dbt, table, policy, nightly=False)  # no checkpoint yet: full read
    assert "(snapshot summary + files and manifests)" in line_of(first, table)
    insert_batches(spark, table, 1)
    second = maintain(dbt, table, policy, nightly=False)  # at most 2 + 1 < 5 small files
    assert "(snapshot summary)" in line_of(second, table)
    assert not acted(second, table, "rewrite_data_files")
    insert_batches(spark, table, 2)  # at most 2 + 3 >= 5: read, and 5 are there
    third = maintain(dbt, table, policy, nightly=False)
    assert "files and manifests" in line_of(third, table)
    assert acted(third, table, "rewrite_data_files")
    snapshots = snapshots_of(spark, table)
    fourth = maintain(dbt, table, policy, nightly=False)  # compacted: healthy, cheap
    assert "(snapshot summary)" in line_of(fourth, table)
    assert not acted(fourth, table, "rewrite_data_files")
    assert snapshots_of(spark, table) == snapshots


def test_one_table_that_cannot_be_read_leaves_the_others_states_read(spark, dbt):
    """Maintenance of many tables (after a publish, the nightly run) reads their states in one
    statement: a table dropped meanwhile gets its own error, and every other table its state,
    summed up as a decision reads it."""
    tables = {name: new_table(spark, f"states_{name}") for name in ("first", "gone", "last")}
    insert_batches(spark, tables["first"], 2)
    insert_batches(spark, tables["last"], 3)
    spark.sql(f"drop table {tables['gone']} purge")
    relations = ", ".join(
        f"api.Relation.create(schema='{SCHEMA}', identifier='states_{name}')" for name in tables
    )
    states = json.loads(
        compiled(
            dbt,
            f"{{% set states = iceberg_table_states([{relations}]) %}}"
            "{% set summed = {} %}{% for name, state in states.items() %}"
            "{% do summed.update({name.split('.')[-1]: iceberg_commit_summary("
            "none, modules.datetime.datetime(2000, 1, 1), state)}) %}{% endfor %}"
            "{{ tojson(summed) }}",
        )
    )
    assert set(states) == {"states_first", "states_gone", "states_last"}, states
    assert "NoSuchTableException" in states["states_gone"]["error"], states["states_gone"]
    for name, inserts in (("first", 2), ("last", 3)):
        summed = states[f"states_{name}"]
        assert summed["error"] is None, summed
        current = count(spark, f"select snapshot_id from {tables[name]}.refs where name = 'main'")
        assert summed["current_snapshot_id"] == current, summed
        assert summed["snapshots"] == inserts and summed["total_data_files"] == inserts, summed


def events_by_day(spark, name: str, partitioning: str | None) -> str:
    """A table of 6 days of events, each day in its own files when partitioned by day (two
    writes: two files a day)."""
    spark.sql(f"create schema if not exists {SCHEMA}")
    spark.sql(f"drop table if exists {SCHEMA}.{name} purge")
    partitioned = f"partitioned by ({partitioning})" if partitioning else ""
    spark.sql(f"""create table {SCHEMA}.{name} (id int, event_at timestamp, event_date date)
                  using iceberg {partitioned} tblproperties ('format-version' = '2')""")
    for write in range(2):
        spark.sql(f"""insert into {SCHEMA}.{name}
            select id, event_at, to_date(event_at) from (
                select id, timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, id % 6, id % 24)
                       as event_at
                from range({write * 60}, {(write + 1) * 60}) as t(id))""")
    return f"{SCHEMA}.{name}"


@pytest.mark.parametrize(
    ("column", "partitioning", "metadata_only"),
    [
        ("event_date", "event_date", True),
        ("event_at", "days(event_at)", True),
        ("event_at", None, False),
    ],
    ids=["date-partition", "day-transform", "unpartitioned"],
)
def test_retention_deletes_the_rows_before_its_window_and_drops_whole_partitions(
    spark, dbt, column, partitioning, metadata_only
):
    """A rule keeping 3 days, counted back from the newest day the column holds: the rows of
    the days before go, every other row stays; on the column's partitions the commit drops
    whole files and writes none (its snapshot summary says so), and the maintenance log line
    says what went. The next night finds nothing to delete and commits nothing."""
    table = events_by_day(spark, f"retention_{column}_{bool(partitioning)}".lower(), partitioning)
    rows = spark.sql(f"select id, event_date from {table}").collect()
    newest = max(row.event_date for row in rows)
    cutoff = newest - timedelta(days=2)
    kept = sorted(row.id for row in rows if row.event_date >= cutoff)
    assert 0 < len(kept) < len(rows)
    dropped_files = [row[0] for row in spark.sql(
        f"select file_path from {table}.files"
        f" where readable_metrics.event_date.lower_bound < date'{cutoff}'").collect()]  # fmt: skip
    touched = len(dropped_files)
    rule = {"column": column, "keep_days": 3}
    run = maintain(dbt, table, {}, retention=rule)
    assert sorted(r.id for r in spark.sql(f"select id from {table}").collect()) == kept
    operation, summary = spark.sql(
        f"select operation, summary from {table}.snapshots order by committed_at desc limit 1"
    ).first()
    assert int(summary["deleted-data-files"]) == touched > 0, summary
    if metadata_only:  # whole files dropped, none written
        assert operation == "delete" and "added-data-files" not in summary, summary
    else:
        assert int(summary["added-data-files"]) > 0, summary
    line = line_of(run, table)
    assert f"delete_expired_rows removed {len(rows) - len(kept)} rows before {cutoff}:" in line
    assert ("none written: metadata only" in line) == metadata_only, line
    snapshots = snapshots_of(spark, table)
    again = maintain(dbt, table, {}, retention=rule)
    assert f"delete_expired_rows skipped (the oldest, {cutoff}, is kept" in line_of(again, table)
    assert snapshots_of(spark, table) == snapshots
    # expiring the snapshots before the delete frees exactly the bytes it removed: the files
    # leave the disk and the log line says how much
    dropped = [local_path(path) for path in dropped_files]
    assert all(path.is_file() for path in dropped)
    window = 0.0002  # hours: every snapshot but the last is older
    expiry = {"older_than_hours": window, "min_window_hours": window, "retain_last": 1,
              "slack_hours": 0}  # fmt: skip
    freed = maintain(dbt, table, {"expire_snapshots": expiry})
    removed_bytes = int(summary["removed-files-size"])
    assert f"freeing {removed_bytes} bytes of data and delete files" in line_of(freed, table)
    assert not any(path.is_file() for path in dropped)


def test_the_nightly_refuses_a_retention_rule_inside_a_readers_window(dbt):
    """The project's nightly operation checks every rule before it takes the run lock: shorter
    than a window the table or its readers re-read (DWD and DWS recompute a late event's day
    up to max_event_lateness_days back), it stops, naming the table, the readers and the fix,
    and maintains nothing."""
    model, rule = "dwd_client__events", {"column": "event_at", "keep_days": 30}
    named = ["keeps 30 days by event_at", "dwd_client__events (30 days)",
             "dws_user__daily (30 days)", "dws_video__daily (30 days)"]  # fmt: skip
    run = dbt(
        ["run-operation", "iceberg_maintain_all",
         "--vars", json.dumps({"retention_overrides": {model: rule}})],
        expect_success=False,
    )  # fmt: skip
    assert not run.success
    assert all(text in run.log for text in named), run.log[-2000:]
    assert "docs/retention.md" in run.log
    assert "run lock: held" not in run.log and "maintenance " not in run.log


def test_position_deletes_are_folded_then_left_alone(spark, dbt):
    """Trigger on delete files in the table, act on every data file with a delete file
    (delete-file-threshold 1) and drop the deletes left dangling: none remain."""
    table = mor_table(spark, "fold_position")
    insert_batches(spark, table, 3)
    for part in range(3):
        spark.sql(f"update {table} set note = 'u{part}' where id = {part * 25}")
    assert count(spark, f"select count(*) from {table}.delete_files") >= 2
    policy = {"rewrite_data_files": {"min_small_files": 50, "min_delete_files": 2}}
    first = maintain(dbt, table, policy)
    assert acted(first, table, "rewrite_data_files"), line_of(first, table)
    assert count(spark, f"select count(*) from {table}.delete_files") == 0
    assert count(spark, f"select count(*) from {table} where note like 'u%'") == 3
    assert count(spark, f"select count(*) from {table}") == 75
    snapshots = snapshots_of(spark, table)
    second = maintain(dbt, table, policy)
    assert not acted(second, table, "rewrite_data_files"), line_of(second, table)
    assert snapshots_of(spark, table) == snapshots


def test_equality_deletes_are_folded_with_remove_dangling_deletes(spark, dbt):
    table = new_table(spark, "fold_equality")
    insert_batches(spark, table, 2)
    iceberg = IcebergTable(spark, f"spark_catalog.{table}")
    iceberg.delete_with_equality_delete("id", [1, 2])
    iceberg.delete_with_equality_delete("id", [30])
    assert count(spark, f"select count(*) from {table}.delete_files where content = 2") == 2
    policy = {"rewrite_data_files": {"min_small_files": 50, "min_delete_files": 2}}
    first = maintain(dbt, table, policy)
    assert acted(first, table, "rewrite_data_files"), line_of(first, table)
    # unpartitioned: Iceberg drops the older one now and keeps the newest until a later
    # commit (its dangling-delete filter runs at commit, remove-dangling-deletes skips
    # unpartitioned tables); below min_delete_files, so the next run is left alone
    assert count(spark, f"select count(*) from {table}.delete_files") <= 1
    assert count(spark, f"select count(*) from {table}") == 47
    assert count(spark, f"select count(*) from {table} where id in (1, 2, 30)") == 0
    second = maintain(dbt, table, policy)
    assert not acted(second, table, "rewrite_data_files"), line_of(second, table)


def test_surplus_position_delete_files_are_merged_then_left_alone(spark, dbt):
    """Partition-scoped deletes add a file per commit (Spark's file-scoped deletes keep one
    per data file, so they never count as surplus)."""
    table = mor_table(spark, "surplus", ", 'write.delete.granularity' = 'partition'")
    insert_batches(spark, table, 2)
    for part in range(3):
        spark.sql(f"update {table} set note = 'u{part}' where id = {part * 7}")
    assert count(spark, f"select count(*) from {table}.delete_files") == 3
    policy = {"rewrite_position_delete_files": {"min_delete_files": 2}}
    first = maintain(dbt, table, policy)
    assert acted(first, table, "rewrite_position_delete_files"), line_of(first, table)
    assert count(spark, f"select count(*) from {table}.delete_files") == 1
    assert count(spark, f"select count(*) from {table} where note like 'u%'") == 3
    second = maintain(dbt, table, policy)
    assert not acted(second, table, "rewrite_position_delete_files"), line_of(second, table)


def test_fragmented_manifests_are_rewritten_then_left_alone(spark, dbt):
    table = new_table(spark, "manifests")
    insert_batches(spark, table, 8, rows=5)
    before = count(spark, f"select count(*) from {table}.manifests")
    assert before >= 8
    policy = {"rewrite_manifests": {"min_manifests": 5}}
    first = maintain(dbt, table, policy)
    assert acted(first, table, "rewrite_manifests"), line_of(first, table)
    assert count(spark, f"select count(*) from {table}.manifests") < 5
    second = maintain(dbt, table, policy)
    assert not acted(second, table, "rewrite_manifests"), line_of(second, table)
    assert count(spark, f"select count(*) from {table}") == 40


def statistics_files(spark, table: str) -> int:
    loaded = IcebergTable(spark, f"spark_catalog.{table}").load()
    loaded.refresh()
    return loaded.statisticsFiles().size()


def test_table_statistics_are_computed_when_rows_changed_enough(spark, dbt):
    table = new_table(spark, "statistics")
    insert_batches(spark, table, 2)
    policy = {"compute_table_stats": {"min_changed_ratio": 0.5}}
    first = maintain(dbt, table, policy)  # none yet
    assert acted(first, table, "compute_table_stats"), line_of(first, table)
    assert statistics_files(spark, table) == 1
    insert_batches(spark, table, 1)  # 50 -> 75 rows: 0.5 changed
    second = maintain(dbt, table, policy, nightly=False)
    assert acted(second, table, "compute_table_stats"), line_of(second, table)
    third = maintain(dbt, table, policy, nightly=False)
    assert not acted(third, table, "compute_table_stats"), line_of(third, table)


def test_expiry_waits_for_its_slack_then_acts_once(spark, dbt):
    table = new_table(spark, "expiry_slack")
    insert_batches(spark, table, 4)
    window = {"older_than_hours": 0, "min_window_hours": 0, "retain_last": 1}
    waiting = maintain(dbt, table, {"expire_snapshots": {**window, "slack_hours": 1}})
    assert not acted(waiting, table, "expire_snapshots")  # past the window, inside the slack
    assert snapshots_of(spark, table) == 4
    first = maintain(dbt, table, {"expire_snapshots": {**window, "slack_hours": 0}})
    assert acted(first, table, "expire_snapshots"), line_of(first, table)
    assert snapshots_of(spark, table) <= 2
    second = maintain(dbt, table, {"expire_snapshots": {**window, "slack_hours": 0}})
    assert not acted(second, table, "expire_snapshots"), line_of(second, table)


# Spark describes identity partitioning and transforms (hidden partitioning) differently
@pytest.mark.parametrize("field", ["user_id", "truncate(1, user_id)"])
def test_partitioning_is_detected_small_files_count_per_partition(spark, dbt, field):
    table = new_table(spark, "partitions")
    spark.sql(f"alter table {table} add partition field {field}")
    for batch in range(3):  # 3 small files in each of 2 partitions: 6 in the table
        spark.sql(f"insert into {table} values ({batch}, 0, 'a'), ({batch}, 1, 'b')")
    assert count(spark, f"select count(*) from {table}.data_files") == 6
    crowded_at_5 = maintain(dbt, table, {"rewrite_data_files": {"min_small_files": 5}})
    assert not acted(crowded_at_5, table, "rewrite_data_files"), line_of(crowded_at_5, table)
    policy = {"rewrite_data_files": {"min_small_files": 3}}
    first = maintain(dbt, table, policy)
    assert acted(first, table, "rewrite_data_files") and "CONFLICT" not in line_of(first, table)
    assert count(spark, f"select count(*) from {table}.data_files") == 2
    second = maintain(dbt, table, policy)
    assert not acted(second, table, "rewrite_data_files"), line_of(second, table)


# -- failures and the maintenance log -------------------------------------------------------

BROKEN = {"compute_table_stats": {"columns": ["no_such_column"]}}  # fails in Iceberg, at run time


def last_log_row(spark, table: str):
    return spark.sql(f"""select * from ops.maintenance_log where table_name = '{table}'
                         order by logged_at desc limit 1""").first()


def test_a_failed_step_warns_and_is_logged_or_fails_when_asked(spark, dbt):
    table = new_table(spark, "failing")
    insert_batches(spark, table, 2)
    warned = maintain(dbt, table, BROKEN)
    assert warned.success
    assert "compute_table_stats FAILED" in line_of(warned, table)
    assert "no_such_column" in warned.log and "warn; the operation goes on" in warned.log
    row = last_log_row(spark, table)
    assert row.outcome == "failed" and "no_such_column" in row.errors
    assert row.steps_run == ["compute_table_stats"]
    failed = dbt(
        [
            "run-operation",
            "iceberg_maintain_table",
            "--args",
            json.dumps({"table": table, "policy": BROKEN, "on_maintenance_error": "fail"}),
        ],
        expect_success=False,
    )
    assert not failed.success and "on_maintenance_error: fail" in failed.log


def test_the_maintenance_log_holds_one_row_per_run_and_feeds_the_health_report(
    spark, dbt, tmp_path
):
    from scripts.health_report import write_report

    table = new_table(spark, "logged")
    policy = {"rewrite_data_files": {"min_small_files": 3}}
    for _ in range(3):
        insert_batches(spark, table, 3, rows=4)
        maintain(dbt, table, policy)
    rows = spark.sql(f"""select outcome, data_files_before, data_files_after, decision_seconds
                         from ops.maintenance_log where table_name = '{table}'
                         order by logged_at""").collect()
    assert [r.outcome for r in rows] == ["maintained"] * 3
    assert [(r.data_files_before, r.data_files_after) for r in rows] == [(3, 1), (4, 1), (4, 1)]
    assert all(r.decision_seconds > 0 for r in rows)
    health = write_report(spark, [table], tmp_path)
    assert [run["data_files_after"] for run in health[table]["maintenance_runs"]] == [1, 1, 1]
    page = (tmp_path / "health.html").read_text()
    assert "maintenance runs" in page and "maintained" in page
