"""Write-audit-publish: a scheduled run writes every table on a branch named after the run, its
tests read that branch, and readers of `main` see the run only once every model and error test
passed.

A warehouse of its own (var schema_prefix) on real tables, its runs in file order:
1. the first run creates every table on its branch (no main while it runs), publishes, tags;
2. a run whose error test fails (an event of a user the dimension does not know yet) leaves
   every table's main snapshot and contents as they were, for a reader during the run too;
3. the user's late change arrives: the fixed run ends equal to the ground truth and the
   landing files, as one uninterrupted run would; a warn test does not block it;
4. a compaction on main during a run: the publish stops there (the tables that finished
   before it are published), main keeps the compaction, the next run (the scheduled `dbt run`
   of the next test) redoes the rest and loses nothing;
5. a --full-refresh publishes the same way: readers keep the old rows until it is green.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from iceberg_scans import data_files, files_per_scan
from layers import (
    assert_events_reconcile_per_file,
    assert_landed_lines_in_ods_once,
    check_layers,
    truth,
)
from scratch_project import copy_project
from test_warehouse import TABLES

from scripts.generate_landing import LandingGenerator, Scale
from scripts.landing import LandingZone

PREFIX = "wap_"
SEED = 61
SCALE = Scale(users=100, videos=30, events_per_batch=500, batches=3, min_changes_per_batch=4)
LATE_USER = 987654  # an event names this user one batch before the user's change arrives
TABLES_WITH_LOADS = ("ods.ods_client__events", "dwd.dwd_client__events")


class Warehouse:
    def __init__(self, root: Path, dbt, spark) -> None:
        self.root, self._dbt, self.spark = root, dbt, spark
        LandingGenerator(root, SEED, SCALE).run(log=lambda _: None)
        self.held = root / "held"
        for folder in (root / "landing").glob("*/batch=*"):
            if folder.name != "batch=000001":
                target = self.held / folder.parent.name / folder.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(folder, target)
        self.reader = spark.newSession()  # another user's session: it never sets a branch
        # main's snapshot after the compaction a run conflicted with: the next run keeps it
        self.compaction_during_run: int | None = None

    def build(self, *args: str, expect_success: bool = True, on_message=None, **variables):
        variables = {"schema_prefix": PREFIX, **variables}
        return self._dbt(
            ["build", *args, "--vars", json.dumps(variables)],
            expect_success=expect_success,
            landing=self.root / "landing",
            on_message=on_message,
        )

    def run(self):
        """A scheduled `dbt run`: it publishes like a build, but runs no test."""
        variables = json.dumps({"schema_prefix": PREFIX})
        return self._dbt(["run", "--vars", variables], landing=self.root / "landing")

    def land(self, batch: int) -> None:
        for folder in self.held.glob(f"*/batch={batch:06d}"):
            shutil.move(folder, self.root / "landing" / folder.parent.name / folder.name)

    def land_file(self, source: str, batch: int, name: str, lines: list[dict]) -> None:
        """A file landed whole into a batch folder (hidden name, then renamed)."""
        folder = self.root / "landing" / source / f"batch={batch:06d}"
        hidden = folder / f".{name}.inprogress"
        hidden.write_text("".join(json.dumps(line) + "\n" for line in lines))
        hidden.rename(folder / name)

    def refs(self, table: str) -> dict[str, int]:
        rows = self.reader.sql(f"select name, snapshot_id from {PREFIX}{table}.refs").collect()
        return {row[0]: row[1] for row in rows}

    def main(self, table: str) -> tuple:
        """What a reader of main sees: (main's snapshot id, rows, a checksum of every row)."""
        rows, checksum = self.reader.sql(
            f"select count(*), sum(xxhash64(to_json(struct(*)))) from {PREFIX}{table}"
        ).first()
        return self.refs(table).get("main"), rows, checksum

    def wap_runs(self) -> list:
        return self.reader.sql(
            f"select load_id, status, message from {PREFIX}ops.wap_runs order by load_id"
        ).collect()


def load_id_of(run) -> int:
    return int(run.log.split("writes on branch wap_")[1].split(";")[0])


@pytest.fixture(scope="module")
def warehouse(dbt, spark, data_dir) -> Warehouse:
    return Warehouse(data_dir / "write_audit_publish", dbt, spark)


def test_a_green_run_creates_its_tables_on_the_branch_then_publishes_and_tags_them(warehouse):
    seen_during_run = {}

    def on_message(message: str) -> None:
        if "OK created" in message and "ods_client__events" in message:
            seen_during_run["ods"] = warehouse.main("ods.ods_client__events")

    # a run tag kept under an hour: 0.5 h is 1,800,000 ms (once cast to 0, refused by Iceberg)
    run = warehouse.build(on_message=on_message, wap_run_tag_retention_hours=0.5)
    load_id = load_id_of(run)
    kept_ms = warehouse.reader.sql(
        f"select max_reference_age_in_ms from {PREFIX}dws.dws_user__daily.refs"
        f" where name = 'run_{load_id}'"
    ).first()[0]
    assert kept_ms == 1_800_000
    # created inside the run: the table had no main, readers saw no row of it
    assert seen_during_run["ods"][:2] == (None, 0)
    for table in TABLES:
        refs = warehouse.refs(table)
        assert refs["main"] == refs[f"run_{load_id}"], table
        assert any(name.startswith("day_") and refs[name] == refs["main"] for name in refs), table
        assert not [name for name in refs if name.startswith("wap_")], (table, refs)
        assert warehouse.main(table)[1] > 0, table
    assert warehouse.wap_runs()[-1][:2] == (load_id, "published")
    check_layers(warehouse.spark, warehouse.root, 1, PREFIX)


def test_the_published_runs_and_consistent_reads_by_run(warehouse, dbt):
    load_id = warehouse.wap_runs()[-1][0]
    listed = dbt(
        ["run-operation", "published_runs", "--vars", json.dumps({"schema_prefix": PREFIX})]
    )
    assert f"run {load_id}  published" in listed.log
    shown = dbt(
        [
            "show",
            "--inline",
            f"select count(*) as n from {{{{ as_of_run(ref('dws_user__daily'), {load_id}) }}}}",
            "--vars",
            json.dumps({"schema_prefix": PREFIX}),
        ]
    )
    rows = warehouse.main("dws.dws_user__daily")[1]
    assert shown.result.results[0].agate_table.rows[0][0] == rows


def orphan_event(root: Path) -> dict:
    """A valid event of batch 2 about a user no changelog has delivered yet."""
    landed = root / "landing/client_events/batch=000002/part-00000.jsonl"
    event = json.loads(landed.read_text().splitlines()[0])
    event.update(
        event_id="ev-wap-late-user",
        user_id=str(LATE_USER),
        _kafka_partition=9,
        _kafka_offset=900_000_001,
    )
    return event


def test_a_failing_error_test_leaves_every_main_as_it_was(warehouse):
    before = {table: warehouse.main(table) for table in TABLES}
    warehouse.land(2)
    warehouse.land_file("client_events", 2, "part-late.jsonl", [orphan_event(warehouse.root)])
    seen_during_run = []

    def on_message(message: str) -> None:
        if "START test" in message and "assert_event_users_and_videos_known" in message:
            # the run's models are all on the branch now: another session still reads main
            seen_during_run.extend(warehouse.main(table) == before[table] for table in TABLES)

    run = warehouse.build(expect_success=False, on_message=on_message)
    load_id = load_id_of(run)
    assert "FAIL" in run.log and "assert_event_users_and_videos_known" in run.log
    assert seen_during_run == [True] * len(TABLES)
    assert {table: warehouse.main(table) for table in TABLES} == before
    # the run did write: its branch, kept, holds batch 2
    branch = f"wap_{load_id}"
    events = f"{PREFIX}ods.ods_client__events"
    on_branch = warehouse.reader.sql(f"select count(*) from {events} version as of '{branch}'")
    assert on_branch.first()[0] > before["ods.ods_client__events"][1]
    assert branch in warehouse.refs("ods.ods_client__events")
    assert f"version as of '{branch}'" in run.log and "wap_drop_branch" in run.log
    # the load ledger reads main: batch 2 is not loaded
    ledger = warehouse.reader.sql(
        f"select distinct file_state from {PREFIX}ods.ods_landing__files where batch_id = 2"
    ).collect()
    assert [row[0] for row in ledger] == ["not_loaded_yet"]
    assert warehouse.wap_runs()[-1][:2] == (load_id, "failed")


def test_the_fixed_run_ends_as_one_uninterrupted_run(warehouse):
    late = json.loads(
        (warehouse.root / "landing/appdb_users/batch=000002/part-00000.jsonl")
        .read_text()
        .splitlines()[0]
    )
    late.update(
        op="+I",
        user_id=LATE_USER,
        user_name="late_user",
        _source_lsn=900_000_001,
        _kafka_partition=9,
        _kafka_offset=900_000_001,
        nickname="a field no source declares",  # the warn test warns; it never blocks
    )
    warehouse.land_file("appdb_users", 2, "part-late.jsonl", [late])
    for batch in range(2, SCALE.batches + 1):  # the source holds the user from now on
        users = truth(warehouse.root, "users", batch)
        row = pd.DataFrame([{column: late.get(column) for column in users.columns}])
        pd.concat([users, row.astype(users.dtypes)]).to_parquet(
            warehouse.root / f"truth/users/batch={batch:06d}.parquet"
        )

    # two small files in a partition make the events' compaction due: it must wait for the
    # publish (the other tables keep their thresholds: their compactions would prove no more)
    due = {"rewrite_data_files": {"strategy": "binpack", "min_small_files": 2}}
    run = warehouse.build(maintenance_overrides={"ods_client__events": due})
    assert "WARN" in run.log and "warn_undeclared_landing_fields" in run.log
    load_id, status, _ = warehouse.wap_runs()[-1]
    assert status == "published"
    # maintenance compacted main after the publish: main = a rewrite on top of the run's tag
    events = f"{PREFIX}ods.ods_client__events"
    compacted = re.search(r"maintenance \S*ods.ods_client__events: data files (\d+) -> 1,", run.log)
    assert compacted and int(compacted[1]) >= 2, run.log[-3000:]
    refs = warehouse.refs("ods.ods_client__events")
    head = warehouse.reader.sql(
        f"select operation, parent_id from {events}.snapshots where snapshot_id = {refs['main']}"
    ).first()
    assert head.operation == "replace" and head.parent_id == refs[f"run_{load_id}"]
    check_layers(warehouse.spark, warehouse.root, 2, PREFIX)
    assert_landed_lines_in_ods_once(warehouse.spark, warehouse.root / "landing", PREFIX)
    assert_events_reconcile_per_file(warehouse.spark, PREFIX)


def test_a_compaction_on_main_during_a_run_is_never_overwritten(warehouse):
    warehouse.land(3)
    table = "ods.ods_appdb__video_changes"
    compaction = {}

    finished = set()

    def on_message(message: str) -> None:
        # the publish follows the order the models finished in: hold the compaction until
        # the run's other ODS tables finished first, so the publish stops after publishing them
        for other in ("ods_client__events ", "ods_appdb__user_changes "):
            if "OK created" in message and other in message:
                finished.add(other)
        if "OK created" in message and table.split(".")[1] in message and not compaction:
            deadline = time.monotonic() + 300
            while len(finished) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(2)
            compaction["before"] = warehouse.main(table)
            done = warehouse.reader.sql(
                "call spark_catalog.system.rewrite_data_files("
                f"table => '{PREFIX}{table}', options => map('rewrite-all', 'true'))"
            ).first()
            compaction["rewritten"] = done[0]
            compaction["after"] = warehouse.main(table)

    # the state reads the changelog: it finishes after it, and must not be published after it
    downstream = "dwd.dim_videos__state"
    downstream_before = warehouse.main(downstream)
    published_first = "ods.ods_appdb__user_changes"  # finished before the compacted table
    published_before = warehouse.main(published_first)
    run = warehouse.build(expect_success=False, on_message=on_message)
    assert compaction["rewritten"] > 0
    assert "moved since the run began" in run.log and "main was left untouched" in run.log
    assert warehouse.main(downstream) == downstream_before
    # main keeps the compaction: same rows, the compaction's snapshot
    assert warehouse.main(table) == compaction["after"]
    assert compaction["after"][1:] == compaction["before"][1:]
    assert warehouse.wap_runs()[-1][1] == "conflict"
    # what finished before the stop is published; the next run builds on it, not again
    assert warehouse.main(published_first)[1] > published_before[1]
    assert f"published before the stop: {PREFIX}ods." in run.log
    # the next run redoes the rest: the next test's scheduled run, checked right after it
    # (a run here only to recover would cost a build of its own)
    warehouse.compaction_during_run = compaction["after"][0]


def untested_files(spark, table: str, published: int) -> int:
    """Data files that may hold a row of a load above `published` (by the file's bounds)."""
    return data_files(
        spark,
        table,
        f"(readable_metrics._load_id.upper_bound > {published}"
        " or readable_metrics._load_id.null_value_count > 0)",
    )


def test_a_scheduled_run_tests_what_it_wrote_and_the_nightly_tests_every_row(warehouse, dbt):
    """A scheduled run's data tests read the loads since the last published build of the
    schedule (its tests passed on everything before; a published `dbt run` tested nothing and
    does not count); the nightly `dbt test --selector reconciliation` reads
    every row, so a duplicate planted in an old load is caught there, and runs the tests
    tagged nightly (the load ledger's, which lists every landed file)."""
    spark = warehouse.spark
    published = max(load for load, status, _ in warehouse.wap_runs() if status == "published")
    landed = warehouse.root / "landing/client_events/batch=000003/part-00000.jsonl"
    events = [json.loads(line) for line in landed.read_text().splitlines()[:20]]
    for number, event in enumerate(events):  # a new batch: batch 3's events under new ids
        event.update(event_id=f"ev-wap-b4-{number}", _kafka_offset=950_000_000 + number)
    (warehouse.root / "landing/client_events/batch=000004").mkdir()
    warehouse.land_file("client_events", 4, "part-00000.jsonl", events)
    LandingZone(warehouse.root / "landing").mark_complete(
        str(warehouse.root / "landing/client_events/batch=000004")
    )

    # a scheduled `dbt run` loads it: published, but no test read its rows, so the next
    # scheduled build still tests them (the bound stays at the last run that tested all)
    untested = load_id_of(warehouse.run())
    assert warehouse.reader.sql(
        f"select status, tested from {PREFIX}ops.wap_runs where load_id = {untested}"
    ).collect() == [("published", False)]
    # the first run after the previous test's conflict: it redid the rest of batch 3 (beside
    # batch 4) on top of the compaction, and lost nothing
    compacted = f"{PREFIX}ods.ods_appdb__video_changes"
    lineage = warehouse.reader.sql(
        f"select snapshot_id from {compacted}.history where is_current_ancestor"
    ).collect()
    assert warehouse.compaction_during_run in {row[0] for row in lineage}  # no commit lost
    check_layers(spark, warehouse.root, 3, PREFIX)  # batch 4 holds events only
    assert_landed_lines_in_ods_once(spark, warehouse.root / "landing", PREFIX)
    assert_events_reconcile_per_file(spark, PREFIX)
    run = warehouse.build()
    tests = {
        result.node.name: result.node.compiled_code
        for result in run.result.results
        if result.node.resource_type == "test"
    }
    scope = f" > {published})"
    scoped = {name for name, sql in tests.items() if scope in sql}
    on_loads = ("ods_client__events", "ods_appdb__", "ods_landing__fields_by_load")
    on_loads += ("dwd_client__events", "quarantine", "__changes")  # the changelogs append
    expected = {name for name in tests if any(model in name for model in on_loads)}
    expected |= {"assert_every_landed_line_is_placed", "assert_event_users_and_videos_known"}
    assert expected <= scoped, sorted(expected - scoped)
    rewritten = [name for name in scoped if "dim_" in name or "dws_" in name]
    assert not [name for name in rewritten if "__changes" not in name]  # every row
    assert "warn_landed_files_needing_attention" not in tests  # it lists every file: nightly

    ods, detail = (f"spark_catalog.{PREFIX}{t}" for t in TABLES_WITH_LOADS)
    scans = {name: files_per_scan(spark, tests[name]) for name in scoped}  # each test run once
    for table in (ods, detail):
        new = untested_files(spark, table, published)
        assert 0 < new < data_files(spark, table), (table, new)
        reads = {name: files.get(table, []) for name, files in scans.items()}
        # the untested loads' files only: the scheduled run's, and those the conflicted run
        # published (it did not end published); none for a not_null: null counts prune them
        assert all(set(counts) <= {0, new} for counts in reads.values()), (table, new, reads)
        assert [name for name, counts in reads.items() if new in counts], (table, reads)

    # an old load's event doubled in main: no scheduled test reads it, the nightly does
    columns = ", ".join(
        "cast(0 as bigint) as _load_id" if column == "_load_id" else f"`{column}`"
        for column in spark.table(detail).columns
    )
    oldest = f"_load_id = (select min(_load_id) from {detail})"
    spark.sql(f"insert into {detail} select {columns} from {detail} where {oldest} limit 1")
    assert spark.sql(f"select count(*) from {detail} where _load_id = 0").first()[0] == 1
    nightly = dbt(
        ["test", "--selector", "reconciliation", "--vars", json.dumps({"schema_prefix": PREFIX})],
        expect_success=False,
    )
    spark.sql(f"delete from {detail} where _load_id = 0")
    failed = [r.node.name for r in nightly.result.results if r.status == "fail"]
    assert "unique_dwd_client__events_event_id" in failed, failed
    assert not [r for r in nightly.result.results if scope in r.node.compiled_code]
    assert "warn_landed_files_needing_attention" in [r.node.name for r in nightly.result.results]


def test_a_full_refresh_publishes_the_same_way(warehouse):
    table = "dwd.dim_users__state"
    before = warehouse.main(table)
    seen_during_run = []

    def on_message(message: str) -> None:
        if "OK created" in message and "dim_users__state" in message:
            seen_during_run.append(warehouse.main(table))

    warehouse.build(
        "--full-refresh",
        "--select",
        "dim_users__state",
        on_message=on_message,
        write_audit_publish=True,
    )
    assert seen_during_run == [before]  # the table refilled on the branch, main untouched
    after = warehouse.main(table)
    assert after[0] != before[0] and after[1] > 0
    history = warehouse.reader.sql(
        f"select snapshot_id from {PREFIX}{table}.history where is_current_ancestor"
    ).collect()
    assert before[0] in {row[0] for row in history}  # the table's history is kept
    check_layers(warehouse.spark, warehouse.root, 3, PREFIX)


def test_nightly_maintenance_never_runs_while_a_run_holds_the_lock(warehouse, dbt):
    """A compaction on main while a run's branch is open would stop that run's publish: the
    nightly operation takes the run lock too, and a live holder makes it refuse, as it makes
    a scheduled run stop before its first model."""
    lock = f"{PREFIX}ops.run_lock"
    process = warehouse.spark.sql("select reflect('lakehouse.RunProcess', 'id')").first()[0]
    warehouse.spark.sql(
        f"update {lock} set holder = '0000aaaa-0000', holder_process = '{process}',"
        " expires_at = current_timestamp() + interval 1 hour"
    )
    before = {table: warehouse.refs(table)["main"] for table in TABLES}
    nightly = dbt(
        [
            "run-operation",
            "iceberg_maintain_all",
            "--vars",
            json.dumps({"schema_prefix": PREFIX, "compaction_min_small_files": 1}),
        ],
        expect_success=False,
    )
    assert not nightly.success and "another run (invocation 0000aaaa-0000) holds" in nightly.log
    # a scheduled run meanwhile stops at its start: none of its models runs (a model of a run
    # without the lock has no branch of its own, it would write main)
    variables = json.dumps({"schema_prefix": PREFIX})
    refused = dbt(["run", "--select", "dim_users", "dws_user__daily", "--vars", variables],
                  expect_success=False)  # fmt: skip
    assert not refused.success and "another run (invocation 0000aaaa-0000) holds" in refused.log
    assert "START sql" not in refused.log, refused.log[-3000:]
    assert warehouse.spark.sql(f"select holder from {lock}").first()[0] == "0000aaaa-0000"
    assert {table: warehouse.refs(table)["main"] for table in TABLES} == before
    # the operator ends that run's lease: it is recorded as abandoned, so its branch expires
    load_id = warehouse.spark.sql(f"select load_id from {lock}").first()[0]
    dbt(["run-operation", "release_run_lock", "--args", "{holder: 0000aaaa-0000}",
         "--vars", variables])  # fmt: skip
    abandoned = warehouse.spark.sql(
        f"select load_id, branch, message from {PREFIX}ops.wap_runs"
        " where invocation_id = '0000aaaa-0000' and status = 'abandoned'"
    ).collect()
    assert [tuple(r) for r in abandoned] == [
        (load_id, f"wap_{load_id}", "its lease was ended by release_run_lock")
    ]
    assert warehouse.spark.sql(f"select holder from {lock}").first()[0] is None
    recorded = f"select count(*) from {PREFIX}ops.wap_runs"
    records_before = warehouse.spark.sql(recorded).first()[0]
    # the lock free, the nightly runs: one table's maintenance shows it (every table's would
    # compact each of them here, a minute)
    nightly = dbt(
        [
            "run-operation",
            "iceberg_maintain_all",
            "--args",
            "{select: [dws_user__daily]}",
            "--vars",
            json.dumps({"schema_prefix": PREFIX, "compaction_min_small_files": 1}),
        ]
    )
    assert "maintenance wap_dws.dws_user__daily:" in nightly.log
    assert "run lock: released" in nightly.log
    # the nightly released its own lease: no run was abandoned, nothing recorded as a run
    assert warehouse.spark.sql(recorded).first()[0] == records_before


def test_a_schema_name_rendered_with_whitespace_still_finds_the_lock_and_publishes(
    warehouse, dbt, tmp_path
):
    """A generate_schema_name written with plain `{{ }}` (as many projects' are) renders the
    name between newlines and indentation. dbt strips them for a model's schema; the run lock
    and the run records are found under the same name, so the run publishes and releases its
    lock instead of ending green with neither."""
    project = copy_project(tmp_path / "project")
    (project / "macros/naming/generate_schema_name.sql").write_text(
        "{% macro generate_schema_name(custom_schema_name, node) %}\n"
        "    {{ var('schema_prefix', '') ~ ((custom_schema_name or target.schema) | trim) }}\n"
        "{% endmacro %}\n"
    )
    runs_before = len(warehouse.wap_runs())
    variables = json.dumps({"schema_prefix": PREFIX, "write_audit_publish": True})
    run = dbt(["run", "-s", "ods_landing__undeclared_fields", "--project-dir", str(project),
               "--vars", variables])  # fmt: skip
    assert "run lock: released" in run.log, run.log[-2000:]
    lock = f"{PREFIX}ops.run_lock"
    assert warehouse.spark.sql(f"select holder from {lock}").first()[0] is None
    runs = warehouse.wap_runs()
    assert len(runs) == runs_before + 1 and runs[-1][1] == "published", runs[-1]
