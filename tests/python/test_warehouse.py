"""Feed landing batches through `dbt build` as a scheduler would: the first batch, then two
batches landed before the next run (a run was missed), and check every layer after each
build against truths computed without the models' SQL: the generator's ground truth for the
dimensions and a pandas recomputation from the landed files for DWS. Then rerun a loaded
batch and prove nothing changes, and show the maintenance post-hooks act on a real table.
(test_write_audit_publish.py and the s3 scenario of test_object_store.py build batch by
batch, one batch a run.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from layers import (
    assert_events_reconcile_per_file,
    assert_landed_lines_in_ods_once,
    assert_user_history,
    check_layers,
    expected_user_history,
)

from scripts.generate_landing import LandingGenerator, Scale

SCALE = Scale(users=400, videos=120, events_per_batch=1_500, batches=3, min_changes_per_batch=15)
SEED = 12  # its batches change users and delete some for good (the snapshots close both)
BUILDS = (1, 3)  # the batches landed when each build runs: 1, then 2 and 3 together
TABLES = [
    "ods.ods_client__events",
    "ods.ods_appdb__user_changes",
    "ods.ods_appdb__video_changes",
    "dwd.dwd_client__events",
    "dwd.dwd_quarantine__rejected_records",
    "dwd.dim_users__state",
    "dwd.dim_videos__state",
    "dwd.dim_users_history",
    "dwd.dim_videos_history",
    "dws.dws_video__daily",
    "dws.dws_user__daily",
]
# views over the tables above (Iceberg tables only in TABLES: other tests read their metadata)
VIEWS = ["dwd.dim_users", "dwd.dim_videos"]


def land(data_dir: Path, batches: int) -> None:
    """Write batches 1..n (existing ones are left untouched, as a landing zone behaves)."""
    scale = Scale(**{**SCALE.__dict__, "batches": batches})
    LandingGenerator(data_dir, SEED, scale).run(log=lambda _: None)


def checksums(spark) -> dict[str, tuple[int, int]]:
    """(rows, order-independent content hash) per table, ignoring load timestamps."""
    result = {}
    for name in TABLES + VIEWS:
        frame = spark.table(name)
        columns = [
            c for c in frame.columns if c not in ("_loaded_at", "_max_loaded_at", "_load_id")
        ]
        row = frame.selectExpr("count(*)", f"coalesce(sum(hash({', '.join(columns)})), 0)").first()
        result[name] = (row[0], row[1])
    return result


# -- the scheduled-refresh scenario --------------------------------------------------------


@pytest.fixture(scope="module")
def built(spark, dbt, data_dir):
    """Build by build: land, dbt build, compare. Returns the per-build observations."""
    observed = []
    for number, batch in enumerate(BUILDS):
        land(data_dir, batch)
        dbt(["build"])
        assert_landed_lines_in_ods_once(spark, data_dir / "landing")
        assert_events_reconcile_per_file(spark)
        observed.append(check_layers(spark, data_dir, batch))
        # the build's snapshot of these batches
        assert_user_history(spark, data_dir, BUILDS[: number + 1])
    return observed


def test_every_build_matches_ground_truth_and_recomputation(built):
    assert [b["batch"] for b in built] == list(BUILDS)
    assert all(b["events"] > 0 and b["users"] > 0 for b in built)


def test_the_snapshots_close_changed_and_deleted_users(spark, data_dir, built):
    """Each build's snapshot run was checked against the ground truth's versions; the batches
    must hold the two cases an SCD-2 history exists for (dbt-adapters #489 was the second run)."""
    history = expected_user_history(data_dir, BUILDS)
    versions: dict[int, list[bool]] = {}
    for row in history:
        versions.setdefault(row[0], []).append(row[-1])
    assert any(sorted(v) == [False, True] for v in versions.values()), "no user changed"
    assert any(not any(v) for v in versions.values()), "no user deleted"  # no current row
    closed = spark.sql("select count(*) from dwd.dim_users_history where dbt_valid_to is not null")
    assert closed.first()[0] == sum(not row[-1] for row in history)


def test_late_events_land_in_their_own_day(spark, built):
    late = spark.sql("""
        select count(*) from dwd.dwd_client__events
        where event_date
            < date_add(date'2026-01-01', cast(_batch_id as int) - 1)
    """).first()[0]
    assert late > 0, "the generator lands late events; some must belong to earlier days"


def test_every_landed_event_is_accepted_or_quarantined(spark, built):
    landed = spark.table("ods.ods_client__events").count()
    accepted = spark.table("dwd.dwd_client__events").count()
    rejected = spark.sql("""select reject_reason, count(*) as n
                            from dwd.dwd_quarantine__rejected_records
                            where source_table = 'client_events' group by 1""").toPandas()
    reasons = set(rejected["reject_reason"])
    assert {
        "unparseable_record",
        "duplicate_event_id",
        "invalid_user_id",
        "missing_event_id",
        "unknown_event_type",
        "event_at_in_future",
        "invalid_event_at",
    } <= reasons
    assert landed == accepted + int(rejected["n"].sum())


def test_dimensions_are_merge_on_read_and_write_delete_files(spark, built):
    properties = dict(spark.sql("show tblproperties dwd.dim_users__state").collect())
    assert properties["write.merge.mode"] == "merge-on-read"
    assert properties["format-version"] == "2"
    # Read from the commits, not the current files: the maintenance post-hook folds delete
    # files into the data once they pass their threshold (docs/maintenance-decisions.md).
    merges_with_deletes = spark.sql("""
        select count(*) from dwd.dim_users__state.snapshots
        where operation = 'overwrite'
            and cast(coalesce(summary['added-delete-files'], '0') as int) > 0""").first()[0]
    assert merges_with_deletes > 0, "a merge into a merge-on-read table writes delete files"


# the scheduled build without its data tests: the same models and snapshots, written on a
# branch and published (a --resource-type keeps the default selector and write-audit-publish;
# --select or --exclude would turn both off). Its publish raises no test's bound (ops.wap_runs
# `tested`), so a later scheduled build still tests every row written since the last full one.
MODELS_AND_SNAPSHOTS = ["build", "--resource-type", "model", "--resource-type", "snapshot"]


def write_order(spark, table: str) -> tuple[str | None, str | None]:
    properties = dict(spark.sql(f"show tblproperties {table}").collect())
    return properties.get("sort-order"), properties.get("write.distribution-mode")


def test_rerunning_a_loaded_batch_changes_nothing(spark, dbt, built):
    before = checksums(spark)
    assert all(rows > 0 for rows, _ in before.values())
    # the builds set each model's write_order; one changed by hand is put back by the next
    # run (the post-hook skips only an order the model's describe shows in place)
    detail = ("user_id ASC NULLS LAST, video_id ASC NULLS LAST", "hash")
    assert write_order(spark, "dwd.dwd_client__events") == detail
    assert write_order(spark, "dwd.dim_users__state") == ("user_id ASC NULLS LAST", "range")
    spark.sql("alter table dwd.dwd_client__events write ordered by event_at")
    # the tables and snapshots are what a rerun could change; the data tests change none, and
    # passed on these same rows in the fixture's builds
    dbt(MODELS_AND_SNAPSHOTS)
    assert checksums(spark) == before
    assert write_order(spark, "dwd.dwd_client__events") == detail


def test_maintenance_post_hooks_compact_and_expire(spark, dbt, built):
    name = "ods.ods_client__events"
    files_before = spark.sql(f"select count(*) from {name}.data_files").first()[0]
    snapshots_before = spark.sql(f"select count(*) from {name}.snapshots").first()[0]
    rows_before = spark.table(name).count()
    # a file per build's load at least; more snapshots than the expiry below keeps
    assert files_before >= len(BUILDS) and snapshots_before > 2
    # the scheduled builds tagged their runs (write-audit-publish): a tag keeps its snapshot
    # from expiry until the tag ages out (wap_run_tag_retention_hours); here they are dropped
    # as if they had
    for (tag,) in spark.sql(f"select name from {name}.refs where type = 'TAG'").collect():
        spark.sql(f"alter table {name} drop tag {tag}")
    vars_ = {
        "compaction_min_small_files": 2,
        "snapshot_retention_hours": 0,
        "min_snapshot_window_hours": 0,
        "snapshot_retain_last": 1,
        "snapshot_expiry_slack_hours": 0,
    }
    dbt(["run", "--select", "ods_client__events", "--vars", json.dumps(vars_)])
    files_after = spark.sql(f"select count(*) from {name}.data_files").first()[0]
    snapshots_after = spark.sql(f"select count(*) from {name}.snapshots").first()[0]
    assert files_after < files_before and files_after == 1
    # the window keeps what committed within the cutoff's second: this run's append and rewrite
    assert snapshots_after <= 2 < snapshots_before
    assert spark.table(name).count() == rows_before


def test_an_unsafe_snapshot_window_is_refused(dbt, built):
    result = dbt(
        [
            "run",
            "--select",
            "ods_client__events",
            "--vars",
            json.dumps({"snapshot_retention_hours": 0}),
        ],
        expect_success=False,
    )
    assert not result.success
    assert "older_than_hours must be a number >= 1" in result.log


def test_landing_is_deterministic_from_the_seed(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    LandingGenerator(first, 5, Scale(batches=2)).run(log=lambda _: None)
    LandingGenerator(second, 5, Scale(batches=2)).run(log=lambda _: None)
    for path in first.rglob("*.jsonl"):
        assert path.read_bytes() == (second / path.relative_to(first)).read_bytes()
    assert np.array_equal(
        pd.read_parquet(first / "truth/users/batch=000002.parquet").values,
        pd.read_parquet(second / "truth/users/batch=000002.parquet").values,
    )


def test_time_travel_on_a_dbt_built_dimension(spark, built):
    from scripts.verify_time_travel import verify_existing

    report = verify_existing(spark, "dwd.dim_users__state")
    assert len(report.checks) >= len(BUILDS)
    assert report.failed == []


# the warehouse's retention rules (dbt_project.yml): nothing of the sample is old enough
KEPT = {
    "dwd.dwd_client__events": "400 days of event_at kept",
    "dwd.dwd_quarantine__rejected_records": "400 days of _loaded_at kept",
    "dws.dws_video__daily": "1830 days of event_date kept",
    "dwd.dim_users_history": "1830 days of dbt_valid_to kept",
}


def test_nightly_operation_applies_each_models_policy_and_retention_rule(dbt, built):
    models = ["dim_users__state", *(name.split(".")[1] for name in KEPT)]
    args = json.dumps({"select": models})
    run = dbt(["run-operation", "iceberg_maintain_all", "--args", args])
    lines = {
        line.split(":")[0].split()[1]: line
        for line in run.log.splitlines()
        if line.startswith("maintenance ") and ": data files" in line
    }
    assert len(lines) == len(models), sorted(lines)
    state = lines["dwd.dim_users__state"]
    assert "rewrite_position_delete_files" in state and "remove_orphan_files" in state
    assert "delete_expired_rows" not in state  # a dimension's state keeps its rows
    for table, kept in KEPT.items():
        assert "delete_expired_rows skipped (the oldest, " in lines[table], lines[table]
        assert kept in lines[table], lines[table]


# compute_table_stats on a column the table lacks: a real procedure failing on a real table,
# after the model's own write committed
BROKEN_MAINTENANCE = {
    "maintenance_overrides": {
        "ods_appdb__user_changes": {"compute_table_stats": {"columns": ["no_such_column"]}}
    }
}


def statuses(run) -> dict[str, str]:
    return {r.node.name: str(r.status) for r in run.result.results}


# the failing model and the child the assertions check: its other descendants add no check
FAILING_AND_CHILD = ["--select", "ods_appdb__user_changes", "dim_users__state"]


def test_a_maintenance_failure_warns_and_the_children_still_run(spark, dbt, built):
    args = ["run", *FAILING_AND_CHILD]
    run = dbt([*args, "--vars", json.dumps(BROKEN_MAINTENANCE)])
    assert statuses(run)["ods_appdb__user_changes"] == "success"
    assert statuses(run)["dim_users__state"] == "success"  # the child ran
    line = next(
        m
        for m in run.log.splitlines()
        if m.startswith("maintenance ods.ods_appdb__user_changes: data files")
    )
    assert "compute_table_stats FAILED" in line and "no_such_column" in line
    row = spark.sql("""select outcome, errors from ops.maintenance_log
                       where table_name = 'ods.ods_appdb__user_changes'
                       order by logged_at desc limit 1""").first()
    assert row.outcome == "failed" and "no_such_column" in row.errors


def test_a_maintenance_failure_fails_the_model_when_configured(dbt, built):
    variables = {**BROKEN_MAINTENANCE, "on_maintenance_error": "fail"}
    args = ["run", *FAILING_AND_CHILD, "--vars", json.dumps(variables)]
    run = dbt(args, expect_success=False)
    assert statuses(run)["ods_appdb__user_changes"] == "error"
    assert statuses(run)["dim_users__state"] == "skipped"
    assert "on_maintenance_error: fail" in run.log


# -- erasure on request (last: it changes the built warehouse for good) -------------------

SUBJECT_TABLES = [t for t in TABLES if t != "dws.dws_video__daily"] + [
    "dwd.dim_users__changes",
    "dwd.dim_videos__changes",
]


class Crash(Exception):
    """Raised from dbt's log callback: the process dies at that message."""


def erasure_subjects(spark) -> list[str]:
    """Two users the erasure must find everywhere: the one with the most rejected records
    (and so events, days and quarantine rows), and an author of a video with a user change."""
    rejected = spark.sql("""
        select user_id from (
            select get_json_object(raw_record, '$.user_id') as user_id
            from dwd.dwd_quarantine__rejected_records where source_table = 'client_events'
        )
        where user_id is not null group by 1 order by count(*) desc, 1 limit 1""").first()[0]
    author = spark.sql(f"""
        select cast(videos.author_user_id as string) from dwd.dim_videos__state as videos
        inner join dwd.dim_users__changes as changes on videos.author_user_id = changes.user_id
        where videos.author_user_id != {rejected} order by 1 limit 1""").first()[0]
    return [rejected, author]


def subject_rows(spark, subjects: list[str]) -> dict[str, int]:
    """Rows per table that are a subject's or name one (counted through Spark, main only)."""
    from erased_keys import snapshot_hits

    return {hit.split("@")[0]: int(hit.split(": ")[1].split()[0])
            for hit in snapshot_hits(spark, SUBJECT_TABLES, subjects, refs=False)[1]}  # fmt: skip


def warehouse_files_holding(data_dir: Path, subjects: list[str]) -> tuple[int, list[str]]:
    """(Parquet files read, hits) over this warehouse's schema folders, read with pyarrow: the
    other files on this worker build warehouses of their own beside it (schema prefixes)."""
    import pyarrow.fs as pafs
    from erased_keys import parquet_hits

    files, hits = 0, []
    for schema in ("ods", "dwd", "dws"):
        folder = str(data_dir / "warehouse" / f"{schema}.db")
        read, found = parquet_hits(pafs.LocalFileSystem(), folder, subjects)
        files, hits = files + read, hits + found
    return files, hits


def test_an_erased_user_leaves_every_layer_snapshot_and_file_and_stays_gone(
    spark, dbt, data_dir, built
):
    from erased_keys import snapshot_hits

    subjects = erasure_subjects(spark)
    before = subject_rows(spark, subjects)
    # each kind of table holds them before: raw lines, detail, quarantine, dimension state,
    # changelog and history, the per-user aggregate (the per-video one counts their events)
    assert set(before) == set(SUBJECT_TABLES), before
    files, hits = warehouse_files_holding(data_dir, subjects)
    assert files > 0 and hits, "the direct scan must find the subjects before the erasure"
    # a write that died before its commit left a file of theirs no snapshot references
    held = Path(next(h.split(": ")[0] for h in hits if "/dwd_client__events/" in h))
    shutil.copy(held, held.with_name("00000-dead-write.parquet"))
    args = json.dumps({"request": "DSR-1", "user_ids": [int(s) for s in subjects]})

    # killed midway (after the first table), then run again with the same arguments
    def crash(message: str) -> None:
        if message.startswith("erasure DSR-1: dwd.dim_users__changes"):
            raise Crash(message)

    killed = dbt(["run-operation", "erase_subjects", "--args", args], expect_success=False,
                 on_message=crash)  # fmt: skip
    assert not killed.success
    holder = spark.sql("select holder from ops.run_lock").first()[0]
    dbt(["run-operation", "release_run_lock", "--args", json.dumps({"holder": holder})])
    run = dbt(["run-operation", "erase_subjects", "--args", args])
    recorded = dict(
        spark.sql("""select concat(table_name, ' ', action), row_count
                                 from ops.erasures where request = 'DSR-1'""").collect()
    )
    # each table's rows counted once across the two runs (the first one's, then the rest)
    assert recorded["dwd.dwd_client__events delete"] == before["dwd.dwd_client__events"]
    assert recorded["dwd.dim_users__changes delete"] == before["dwd.dim_users__changes"]
    # the record names tables, actions and counts: no column for an erased value
    assert spark.table("ops.erasures").columns == [
        "request", "table_name", "action", "row_count", "detail", "subject_count",
        "requested_by", "recorded_at",
    ]  # fmt: skip
    backfill = next(line for line in run.log.splitlines() if " recompute: dbt build " in line)
    command = backfill.split(" recompute: dbt ", 1)[1].split()

    finish = ["run-operation", "erase_subjects", "--args", "{request: DSR-1, finish: true}"]
    early = dbt(finish, expect_success=False)
    assert "has not been recomputed since the erasure DSR-1" in early.log
    dbt(command)
    dbt(finish)

    assert subject_rows(spark, subjects) == {}
    check_layers(spark, data_dir, BUILDS[-1], erased=subjects)
    files, hits = warehouse_files_holding(data_dir, subjects)
    assert files > 0 and hits == [], hits[:5]
    read, hits = snapshot_hits(spark, SUBJECT_TABLES, subjects)
    assert read >= len(SUBJECT_TABLES) and hits == [], hits
    for table in SUBJECT_TABLES:  # time travel to before the erasure is gone with its tags
        refs = spark.sql(f"select name from {table}.refs").collect()
        assert [r[0] for r in refs] == ["main"], (table, refs)

    # the connector re-sends some of the erased user's records (same partition and offset)
    events = data_dir / "landing" / "client_events"
    files = sorted(events.glob("batch=*/part-*"))
    lines = [line for path in files for line in path.read_text().splitlines()]
    resent = [line for line in lines if f'"user_id":"{subjects[0]}"' in line][:5]
    assert len(resent) == 5
    landing = events / "batch=000002"
    (landing / ".resent.jsonl").write_text("\n".join(resent) + "\n")
    (landing / ".resent.jsonl").rename(landing / "part-resent.jsonl")
    dbt(["build", "--select", "ods_client__events", "dwd_landing__typed_rows", "dwd_client__events",
         "dwd_quarantine__rejected_records", "assert_every_landed_line_is_placed"])  # fmt: skip
    refused = spark.sql("""
        select reject_reason, raw_record from dwd.dwd_quarantine__rejected_records
        where _source_file like '%part-resent.jsonl'""").collect()
    positions = [{k: str(v) for k, v in json.loads(line).items() if k.startswith("_kafka")}
                 for line in resent]  # fmt: skip
    assert sorted((r[0], r[1]) for r in refused) == sorted(
        ("redelivered_record", json.dumps({"_erased": "DSR-1", **p}, separators=(",", ":")))
        for p in positions
    )
    assert subject_rows(spark, subjects) == {}
    files, hits = warehouse_files_holding(data_dir, subjects)
    assert hits == [], hits[:5]
