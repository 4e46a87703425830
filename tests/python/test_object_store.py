"""The `s3` target's services and catalog: SeaweedFS (S3 API + Iceberg REST catalog) started
by `lakehouse-services` on free loopback ports with keys of this test run, the S3A jars
fetched and verified, and a Spark process of the `s3` target whose Iceberg tables land in the
bucket and the REST catalog while its views and landing tables stay in Spark's built-in catalog:
two scheduled `dbt build`s, each layer checked against the truth after each, then pyiceberg
reading every table through the REST catalog.

One set of services for the file; the Spark side runs in a process of its own (pytest's
session is the `ci` target's)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from erased_keys import written_pattern
from loopback import is_loopback, listening_addresses
from object_store_services import process_env, rest_catalog
from test_concurrency import assert_no_row_lost_and_the_races_real

from dbt.adapters.lakehouse.object_store import ServiceError, check_before_session
from dbt.adapters.lakehouse.s3a_jars import JARS, JarsMissing, cached_jars, fetch
from scripts import services
from scripts.export_changes import CHANGE_TYPES
from scripts.spark_config import PROJECT_DIR

DBT = Path(sys.executable).with_name("dbt")


def test_every_port_binds_loopback_and_status_reports_ready(store):
    settings, _, _ = store
    checks = services.status(settings)
    assert checks and all(ok for _, ok, _ in checks), checks
    for name, port in settings.ports().items():
        addresses = listening_addresses(port)
        assert addresses and all(map(is_loopback, addresses)), (name, port, addresses)
    assert set(services.buckets(settings)) >= {"lakehouse", "lakehouse-landing"}


def test_a_wrong_key_is_refused_naming_the_fix(store, monkeypatch):
    settings, _, _ = store
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(ServiceError, match="refused AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"):
        services.buckets(settings)


def test_missing_keys_stop_the_start_naming_them(store, monkeypatch):
    settings, _, _ = store
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ServiceError, match="AWS_SECRET_ACCESS_KEY are not set"):
        services.start(settings)


def test_no_printout_or_setting_spark_shows_carries_the_secret_key(store):
    _, env, _ = store
    secret = env["AWS_SECRET_ACCESS_KEY"]
    settings = "from scripts.spark_config import spark_conf; print(json.dumps(spark_conf('s3')))"
    commands = {
        "listing": ["-m", "scripts.spark_config", "--target", "s3"],
        "export": ["-m", "scripts.spark_config", "--target", "s3", "--export"],
        "settings": ["-c", f"import json; {settings}"],
    }
    out = {
        name: subprocess.run(
            [sys.executable, *args],
            cwd=PROJECT_DIR,
            env=process_env(env),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for name, args in commands.items()
    }
    for printout in ("listing", "export"):
        assert "spark.sql.catalog.spark_catalog.uri" in out[printout], out[printout]
        assert secret not in out[printout], printout
    conf = json.loads(out["settings"])
    holding = [name for name, value in conf.items() if secret in value]
    assert holding == [
        "spark.sql.catalog.spark_catalog.credential",
        "spark.sql.catalog.verify.credential",
    ], holding
    hidden = re.compile(conf["spark.redaction.regex"])
    assert all(hidden.search(name) for name in holding)  # Spark shows them as *********


SECOND_PROCESS = """
import json
from scripts.session import get_spark
from scripts.tasks import run_dbt
spark = get_spark("s3")
# a new machine: a fresh metastore beside the existing catalog gets the views again
assert run_dbt("s3", ["run", "--select", "dim_users", "dim_videos"]) == 0
print("RESULT", json.dumps({
    "dim_users": spark.table("dwd.dim_users").count(),
    "events": spark.table("dwd.dwd_client__events").count(),
}))
"""


def store_log(env: dict[str, str]) -> str:
    """The end of the store's own log: what it said about a request it failed."""
    log = Path(env["LAKEHOUSE_DATA_DIR"]) / "services" / "seaweedfs.log"
    lines = log.read_text(errors="replace").splitlines()[-40:] if log.is_file() else []
    return "\n-- the store's log:\n" + "\n".join(lines)


PHASES = PROJECT_DIR / "target" / "s3-scenario-phases.json"


def run_s3_process(env: dict[str, str], script: str, phases_to: Path = PHASES) -> dict:
    # ~6 minutes on an idle 2-core machine; a busy one may take twice that and more
    try:
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=PROJECT_DIR,
            # no manifest.json / run_results.json but where the script asks (docs): each of its
            # ~70 dbt commands wrote the 1 MB manifest twice
            env={**process_env(env), "DBT_WRITE_JSON": "false"},
            capture_output=True,
            text=True,
            timeout=1800,
        )
    except subprocess.TimeoutExpired as late:  # say how far it got
        tail = str(late.output)[-3000:]
        raise AssertionError(f"the s3 script ran out of time:\n{tail}{store_log(env)}") from late
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:] + store_log(env)
    reports = {  # the script's "RESULT {json}" line, and any other "TAG {json}" line
        line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1])
        for line in done.stdout.splitlines()
        if line.split(" ", 1)[0]
        in ("RESULT", "NIGHTLY", "CONCURRENCY", "VERIFY", "RETENTION", "ERASURE")
    }
    phases = [json.loads(line.split(" ", 1)[1]) for line in done.stdout.splitlines()
              if line.startswith("PHASE ")]  # fmt: skip
    if phases:  # [name, seconds since the start] after each part of the scenario
        phases_to.parent.mkdir(exist_ok=True)
        phases_to.write_text(json.dumps(phases, indent=1) + "\n")
    return {**reports.pop("RESULT"), **{tag.lower(): report for tag, report in reports.items()}}


# -- the layers on the s3 target, batch by batch ---------------------------------------------

BATCHES = 3
# the scheduled builds run after batches 2 and 3 land: the first while batch 2's events are
# mid-write (batch 1 and the changelogs' batch 2 complete), the second once batch 3 landed
BUILT_AFTER = (2, 3)
# test_concurrency.py's randomized search runs 20 interleavings on the Hive catalog; these
# prove the REST catalog's commit (the service's pointer swap) under the same races
REST_INTERLEAVINGS = 8
LAYERS = (
    """
import json, os, re, signal, subprocess, sys, threading, time
from pathlib import Path
from types import SimpleNamespace
sys.path.insert(0, "tests/python")
from layers import (assert_events_reconcile_per_file, assert_landed_lines_in_ods_once,
                    assert_user_history, check_layers, truth)
from scripts.export_changes import CHANGE_TYPES, export, export_changelog
from scripts.generate_landing import LandingGenerator, Scale
from scripts.iceberg_java import IcebergTable
from scripts.landing import MARKER, LandingZone, filesystem, join
from scripts.session import get_spark
from scripts.spark_config import DataPaths
from scripts.tasks import run_dbt
from scripts import services
from dbt.adapters.lakehouse.object_store import ServiceSettings

STARTED = time.monotonic()
# dbt's caches for many commands in one process, as conftest.py's `dbt` turns them on
from dbt_common.tests import enable_test_caching
enable_test_caching()


def phase_done(name):  # where the scenario's minutes go: target/s3-scenario-phases.json
    print("PHASE", json.dumps([name, round(time.monotonic() - STARTED, 1)]), flush=True)


data = DataPaths.for_target("s3")
assert data.landing.startswith("s3a://"), data.landing  # the bucket, never a local folder
zone = LandingZone(data.landing)
spark = get_spark("s3")
SERVICES = ServiceSettings.from_env(data.root)
KILLED = {}


def dbt(args, expect_success=True):  # in this process, every message kept
    from dbt.cli.main import dbtRunner
    messages = []
    done = dbtRunner(callbacks=[lambda event: messages.append(str(event.info.msg))]).invoke(
        [*args, "--target", "s3"])
    return SimpleNamespace(success=bool(done.success), log="\\n".join(messages))


def ods_mains():
    return {name: spark.sql(f"select snapshot_id from {name}.refs where name = 'main'").first()[0]
            for name in ("ods.ods_client__events", "ods.ods_appdb__user_changes")}


class SchedulerRun:
    # a run of the scheduler on another node: a process of its own, with a metastore of its
    # own (embedded Derby admits one process); its output read as it comes (a full pipe
    # would stall it) and kept for the failure message
    def __init__(self, args, hadoop=None):
        # hadoop: S3A settings of this process only (set before its first S3A client exists)
        node = {**os.environ, "LAKEHOUSE_METASTORE_DIR": str(data.root / "scheduler-metastore")}
        self.process = subprocess.Popen(
            [sys.executable, "-c", "import json, sys; from scripts.tasks import run_dbt;"
             " from scripts.session import get_spark;"
             " conf = get_spark('s3').sparkContext._jsc.hadoopConfiguration();"
             " [conf.set(k, v) for k, v in json.loads(sys.argv[1]).items()];"
             " raise SystemExit(run_dbt('s3', sys.argv[2:]))", json.dumps(hadoop or {}), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=node,
            start_new_session=True)
        self.lines, self.new_line = [], threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            with self.new_line:
                self.lines.append(line)
                self.new_line.notify_all()
        with self.new_line:
            self.new_line.notify_all()

    def wait_for(self, pattern, timeout=600):  # the first line matching, or None if it ended
        deadline, seen = time.time() + timeout, 0
        with self.new_line:
            while time.time() < deadline:
                for line in self.lines[seen:]:
                    if re.search(pattern, line):
                        return line
                seen = len(self.lines)
                if self.process.poll() is not None and not self.reader.is_alive():
                    return None
                self.new_line.wait(timeout=1)
        return None

    def output(self):
        # the tail, and any line saying why a JVM ended (it may lie far above the tail)
        fatal = [line for line in self.lines
                 if re.search(r"fatal error|hs_err|OutOfMemory|Killed|SIG[A-Z]+ ", line)]
        return "".join(fatal[:20]) + "".join(self.lines)[-3000:]

    def end_after_the_store_died(self):
        # the run fails on its own, or its scheduler kills it; the scheduler then ends what is
        # left of it (the JVM may outlive its Python driver); the store starts again
        try:
            self.process.wait(timeout=180)
            ended = "failed on its own"
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            ended = "killed after 180 s"
        assert self.process.returncode != 0, self.output()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        self.reader.join(timeout=60)
        services.start(SERVICES, log=lambda _: None)
        return {"ended": ended, "exit": self.process.returncode}


def kill_the_store():  # the object store and its catalog, SIGKILLed
    os.killpg(json.loads((SERVICES.root / "state.json").read_text())["pid"], signal.SIGKILL)


def kill_the_store_during_a_build():
    # a scheduled build (the scheduler's run); the store killed once that build writes DWD
    # (ODS is on its branch), then started again
    run = SchedulerRun(["build"])
    assert run.wait_for("run lock: held by this run"), run.output()
    # a second scheduled build while that one holds the lock: refused, writes nothing
    before = ods_mains()
    second = dbt(["build"])
    overlapping = {"refused": not second.success and "run lock: another run" in second.log
                   and "this run wrote nothing" in second.log,
                   "mains_unchanged": ods_mains() == before}
    started = run.wait_for("START sql incremental model dwd.dwd_client__events")
    assert started, "the build never reached dwd_client__events: " + run.output()
    kill_the_store()
    return {**run.end_after_the_store_died(), "overlapping": overlapping}


def kill_the_store_during_a_compaction():
    # the nightly maintenance (the scheduler's run); the store killed once a compaction has
    # written a new data file, before it commits, then started again
    from pyarrow.fs import FileSelector
    # S3A's own retries of a call off (the SDK's 6 attempts, which ride out a passing 500,
    # stay): once the store is dead each file this run deletes in its cleanup waited out
    # both, for over a minute, before it failed as it does now
    run = SchedulerRun(["run-operation", "iceberg_maintain_all", "--log-level", "debug",
                        "--vars", json.dumps({"compaction_min_small_files": 2})],
                       hadoop={"fs.s3a.retry.limit": "0"})
    line = run.wait_for(r"running rewrite_data_files on \\S+")
    assert line, run.output()
    found = re.search(r"running rewrite_data_files on (\\S+)", line)[1].replace("`", "")
    schema, table = found.split(".")[-2:]
    fs, folder = filesystem(f"s3://{SERVICES.warehouse_bucket}/{schema}/{table}/data")
    listed = lambda: {f.path for f in fs.get_file_info(FileSelector(folder, recursive=True))}
    before, written, deadline = listed(), [], time.time() + 600
    while not written and run.process.poll() is None and time.time() < deadline:
        written = sorted(listed() - before)
    kill_the_store()
    ended = run.end_after_the_store_died()
    committed = [spark.sql(f"select count(*) from {schema}.{table}.all_data_files"
                           f" where file_path like '%{path.rsplit('/', 1)[-1]}'").first()[0]
                 for path in written]
    return {"table": f"{schema}.{table}", "written": written, "committed": committed,
            "exit": ended["exit"]}


def redeliver_into_an_old_folder():
    # a connector restart: records already landed (same partition and offset) arrive again,
    # late, as a new file in batch 1's folder, complete since long
    for source in ("client_events", "appdb_users"):
        folder = zone.batch_folder(source, 1)
        original = zone.lines(join(folder, "part-00000.jsonl"))
        text = "".join(original[i] + "\\n" for i in REDELIVERED)
        zone.write_file(folder, "part-restart-00000.jsonl", text)


REDELIVERED = (0, 5, 9)
CONSUMER = {"rows": {}, "snapshot": None, "exported": []}
CHANGELOG = {"rows": {}, "snapshot": None, "exported": []}


def replay(consumer, out, end):
    # apply one export by key: a before image must be what the consumer holds
    counts = dict.fromkeys(CHANGE_TYPES, 0)
    for line in out.read_text().splitlines():
        change = json.loads(line)
        kind = change.pop("_change_type")
        counts[kind] += 1
        for column in [c for c in change if c.startswith("_change_")] + ["_state_snapshot_id",
                                                                         "_recorded_at"]:
            change.pop(column, None)
        if kind in ("delete", "update_before"):
            held = consumer["rows"].pop(change["user_id"])
            assert held == change, (held, change)
            if kind == "update_before":
                consumer["rows"][change["user_id"]] = held
        else:
            assert (change["user_id"] in consumer["rows"]) == (kind == "update_after"), change
            consumer["rows"][change["user_id"]] = change
    consumer["exported"].append({"to": end, "moved": end != consumer["snapshot"], **counts})
    consumer["snapshot"] = end


def assert_replay_is_the_truth(rows, batch, feed):
    live = {key: (row["user_name"], row["region"], row["is_creator"], row["user_level"])
            for key, row in rows.items() if not row.get("_is_deleted")}
    expected = {int(row.user_id): (row.user_name, row.region, bool(row.is_creator),
                                   int(row.level))
                for row in truth(data.root, "users", batch).itertuples()}
    assert live == expected, f"the replay of {feed} differs after batch {batch}"


def consume_the_change_feed(batch=None):
    # two downstream consumers of the users dimension, each resuming from the snapshot it
    # last exported and replaying by key; their live rows must be the generator's truth:
    # export-changes comparing two snapshots of the merge-on-read state, and export-changes
    # reading the dimension's changelog (only what the published builds appended)
    out = data.root / "change-feed" / f"{len(CONSUMER['exported'])}.jsonl"
    end, _ = export(spark, "dwd.dim_users__state", ["user_id"], out, start=CONSUMER["snapshot"])
    replay(CONSUMER, out, end)
    out = data.root / "changelog" / f"{len(CHANGELOG['exported'])}.jsonl"
    end, _ = export_changelog(spark, "dwd.dim_users__changes", out,
                              start=CHANGELOG["snapshot"])
    replay(CHANGELOG, out, end)
    if batch is not None:
        assert_replay_is_the_truth(CONSUMER["rows"], batch, "the state's snapshots")
        assert_replay_is_the_truth(CHANGELOG["rows"], batch, "the changelog")


for batch in BUILT_AFTER:
    scale = Scale(users=200, videos=60, events_per_batch=600, batches=batch,
                  min_changes_per_batch=12)
    LandingGenerator(data.root, 12, scale, landing=data.landing).run(log=lambda _: None)
    if batch == 2:  # the events writer is mid-batch: files there, the marker not yet
        pending = zone.batch_folder("client_events", 2)
        zone.fs.delete_file(join(pending, MARKER))
    if batch == BATCHES:  # first, the scheduled run in whose middle the store dies
        redeliver_into_an_old_folder()
        KILLED.update(kill_the_store_during_a_build())
    # the last build leaves the merge-on-read state's delete files (its post-hook folds
    # them otherwise) for pyiceberg to apply
    keep_deletes = {"dim_users__state": {"rewrite_data_files": None,
                                         "rewrite_position_delete_files": None}}
    # and its retention of a dead run's branch is 0 h: this published run drops it at once
    variables = ({"maintenance_overrides": keep_deletes, "wap_failed_branch_retention_hours": 0}
                 if batch == BATCHES else {})
    assert run_dbt("s3", ["build", "--vars", json.dumps(variables)]) == 0, f"batch {batch}"
    # ODS holds every line of the complete batches once and nothing of the pending one; the
    # next run's generator rewrites the pending files (same names, same bytes) and marks them
    lines = assert_landed_lines_in_ods_once(spark, data.landing)
    assert_events_reconcile_per_file(spark)
    check_layers(spark, data.root, batch, landing=data.landing)
    built = BUILT_AFTER[:BUILT_AFTER.index(batch) + 1]
    assert_user_history(spark, data.root, built)  # a snapshot each build
    consume_the_change_feed(batch)
    if batch == BATCHES:  # what the run the store died under left behind
        KILLED["branches_left"] = sorted(
            r.name for r in spark.sql("select name from ods.ods_client__events.refs").collect()
            if r.name.startswith("wap_"))
        KILLED["recorded"] = [list(r) for r in spark.sql(
            "select load_id, branch, status, message from ops.wap_runs"
            " where status not in ('published', 'failed', 'conflict')").collect()]
        KILLED["published"] = spark.sql(
            "select max(load_id) from ops.wap_runs where status = 'published'").first()[0]
    if batch == 2:
        held = sum(len(zone.lines(path)) for path in zone.visible_files("client_events")
                   if "/batch=000002/" in path)
        loaded = spark.sql("select count(*) from ods.ods_client__events"
                           " where _source_file like '%/batch=000002/%'").first()[0]
        assert held > 0 and loaded == 0, (held, loaded)
    print("BATCH", batch, json.dumps(lines), flush=True)
    phase_done(f"build after batch {batch}")

# dbt docs on this target: every Iceberg model and snapshot in catalog.json with its columns
assert run_dbt("s3", ["docs", "generate", "--write-json"]) == 0
phase_done("docs generate")
catalog = json.loads((Path(os.environ["DBT_TARGET_PATH"]) / "catalog.json").read_text())
manifest = json.loads((Path(os.environ["DBT_TARGET_PATH"]) / "manifest.json").read_text())
listed = catalog["nodes"]
DOCS = {uid: {"table": f"{node['schema']}.{node['alias']}",
              "declared": sorted(node["columns"]),
              "listed": sorted(listed.get(uid, {}).get("columns", {})),
              "stats": listed.get(uid, {}).get("stats", {}).get("has_stats", {}).get("value"),
              "rows": listed.get(uid, {}).get("stats", {}).get("rows", {}).get("value")}
        for uid, node in manifest["nodes"].items()
        if node["resource_type"] in ("model", "snapshot")
        and node["config"].get("file_format") == "iceberg"
        and node["config"]["materialized"] in ("table", "incremental", "snapshot")}

tables = {}  # every Iceberg table of the service
for schema in ("ods", "dwd", "dws"):
    listed = spark.sql(
        f"select reflect('lakehouse.RestSessionCatalog', 'serviceTables', '{schema}')"
        " from values (1)"
    ).first()[0]
    for table in listed.split():
        tables[f"{schema}.{table}"] = spark.table(f"{schema}.{table}").count()
ods = {}
for name in (t for t in tables if t.startswith("ods.") and "_raw_line" in spark.table(t).columns):
    rows = spark.sql(f"select _source_file, _source_line, _raw_line from {name}").collect()
    ods[name] = sorted(map(list, rows))
state = "dwd.dim_users__state"
events = "dwd.dwd_client__events"
print("RESULT", json.dumps({
    "event_files": [r[0] for r in spark.sql(f"select file_path from {events}.files").collect()],
    "views": sorted(
        r.viewName for r in spark.sql("show views in dwd").collect() if not r.isTemporary
    ),
    "refs": sorted(r.name for r in spark.sql(f"select name from {events}.refs").collect()),
    "dim_users": spark.table("dwd.dim_users").count(),
    "tables": tables,
    "ods": ods,
    "user_state": sorted(r.user_id for r in spark.sql(f"select user_id from {state}").collect()),
    "killed_run": KILLED,
    "redelivered": dict(map(tuple, spark.sql(
        "select source_table, count(*) from dwd.dwd_quarantine__rejected_records"
        " where reject_reason = 'redelivered_record' and _source_file like '%part-restart%'"
        " group by 1").collect())),
    "docs": DOCS,
    "state_delete_files": spark.sql(f"select count(*) from {state}.delete_files").first()[0],
    "state_snapshot": spark.sql(
        f"select snapshot_id from {state}.refs where name = 'main'").first()[0],
}), flush=True)


def mains():  # each table's main snapshot, and a checksum of every row a reader of main sees
    return {
        name: (
            spark.sql(f"select snapshot_id from {name}.refs where name = 'main'").first()[0],
            *spark.sql(f"select count(*), sum(xxhash64(to_json(struct(*)))) from {name}").first(),
        )
        for name in tables
    }


# A red run: an event of a user no changelog has delivered, in a batch of its own. Its error
# test fails: every table's main stays as it was; the run's branch, kept, holds the event.
phase_done("reads after the builds")
published = mains()
event = json.loads(zone.lines(zone.visible_files("client_events")[-1])[0])
event.update(event_id="ev-s3-late-user", user_id="987654", _kafka_partition=9,
             _kafka_offset=900_000_001)
red = zone.batch_folder("client_events", BATCHES + 1)
zone.write_file(red, "part-late.jsonl", json.dumps(event) + "\\n")
zone.mark_complete(red)
assert run_dbt("s3", ["build"]) == 1, "the red run passed"
assert mains() == published, "a red run changed a main"
branches = [r.name for r in spark.sql("select name from ods.ods_client__events.refs").collect()
            if r.name.startswith("wap_") and r.name not in KILLED["branches_left"]]
assert len(branches) == 1, branches
on_branch = f"select count(*) from ods.ods_client__events version as of '{branches[0]}'"
assert spark.sql(on_branch).first()[0] == published["ods.ods_client__events"][1] + 1

# The nightly maintenance on the bucket, orphan-file removal included (it lists the store),
# beside a write in flight: its data file is in a table's folder, not committed yet.
phase_done("red run")
in_flight = IcebergTable(spark, "spark_catalog.dwd.dim_users__state").write_data_file(
    [{"user_id": 9_000_000_001}], prefix="in-flight")
store, path = filesystem(str(in_flight.location()))
compaction_killed = kill_the_store_during_a_compaction()
compact = json.dumps({"compaction_min_small_files": 2})
assert run_dbt("s3", ["run-operation", "iceberg_maintain_all", "--vars", compact]) == 0
log = spark.sql(
    "select table_name, steps_run, errors, data_files_before, data_files_after"
    " from ops.maintenance_log where trigger = 'nightly'"
).collect()
maintained = {row.table_name.split(".", 1)[-1].replace("`", "") for row in log}
print("NIGHTLY", json.dumps({
    "in_flight_kept": store.get_file_info(path).type.name == "File",
    "rows_kept": [name for name, (_, *rows) in mains().items()
                  if tuple(rows) == published[name][1:]],
    "branch_rows": spark.sql(on_branch).first()[0],
    "tables": sorted(maintained),
    "orphans_listed": sorted({row.table_name for row in log
                              if "remove_orphan_files" in (row.steps_run or [])}),
    "errors": [row.errors for row in log if row.errors],
    "compacted": [row.table_name for row in log
                  if row.data_files_after is not None
                  and row.data_files_after < row.data_files_before],
    "compaction_killed": compaction_killed,
    # the change feed over the compaction (and the red run, which changed no main)
    "change_feed": consume_the_change_feed() or CONSUMER["exported"],
    "changelog": CHANGELOG["exported"],
}), flush=True)

# Merges and maintenance racing on merge-on-read tables of the REST catalog, where a commit is
# the service's atomic swap (no Hive lock): test_concurrency's interleavings, its checks
phase_done("nightly maintenance")
from test_concurrency import run_interleaving, summarize

print("CONCURRENCY", json.dumps(summarize([run_interleaving(spark, dbt, s)
                                            for s in range(REST_INTERLEAVINGS)])), flush=True)

# The verification scripts, their scratch tables in this target's catalog and bucket
phase_done("racing interleavings")
from scripts import verify_compaction, verify_time_travel
from scripts.iceberg_java import IcebergTable

# deletion vectors (format v3) are Puffin files, which this store's table buckets refuse
# (403 for any key but .parquet/.avro/.json): that scenario must fail on the store's refusal
in_bucket = [s for s in verify_compaction.SCENARIOS if s.format_version < 3]
compaction = verify_compaction.verify(spark, in_bucket)
vectors = next(s for s in verify_compaction.SCENARIOS if s.format_version == 3)
try:
    verify_compaction.run_scenario(spark, vectors, True)
    refusal = None
except Exception as error:
    refusal = [str(error).count("403 Forbidden"),
               re.findall(r"Failed to create file: (s3://\\S+?\\.puffin)", str(error))[:1]]
travel = verify_time_travel.verify_scripted(spark)
print("VERIFY", json.dumps({
    "scenarios": [s.key for s in in_bucket],
    "deletion_vectors_refused": refusal,
    "compaction_results": len(compaction["results"]),
    "compaction_failures": verify_compaction.failures(compaction),
    "resurrected": {str(demo["use_starting_sequence_number"]): demo["deleted_row_resurrected"]
                    for demo in compaction["resurrection_demo"]},
    "time_travel_paths": sorted({check.path for check in travel.checks}),
    "time_travel_failed": [f"{check.what} ({check.path})" for check in travel.failed],
    "location": str(IcebergTable(spark, verify_time_travel.SCRATCH_TABLE).load().location()),
}, default=str), flush=True)
phase_done("verification scripts")

""".replace("REST_INTERLEAVINGS", str(REST_INTERLEAVINGS))
    .replace("BATCHES", str(BATCHES))
    .replace("BUILT_AFTER", repr(BUILT_AFTER))
)


@pytest.fixture(scope="module")
def layers_on_s3(store) -> dict:
    _, env, _ = store
    return run_s3_process(env, LAYERS)


def test_every_layer_equals_the_truth_batch_by_batch_on_the_s3_target(layers_on_s3):
    """The script above asserted, after each of the two scheduled builds: every landed line
    in ODS once, every event file reconciled, both dimensions equal to the generator's ground
    truth, both DWS tables equal to a pandas recomputation, the SCD-2 history."""
    tables = layers_on_s3["tables"]
    assert {"ods.ods_client__events", "dwd.dim_users__state", "dws.dws_user__daily"} <= set(tables)
    assert all(rows > 0 for name, rows in tables.items() if "quarantine" not in name), tables


def test_records_redelivered_into_an_old_folder_load_once_as_lines_and_are_rejected(
    layers_on_s3,
):
    """Before the second build, a connector restart delivered three events and three user
    changes again (same partition and offset) as a new file in batch 1's folder each:
    the object store keeps no folder times, so the listing found it; every line in ODS once
    and every layer exact (the script's checks), each record rejected as redelivered."""
    assert layers_on_s3["redelivered"] == {"client_events": 3, "appdb_users": 3}


def test_the_store_killed_in_a_build_then_restarted_the_next_run_is_exact(layers_on_s3):
    """Before the second build: a scheduled build in another process, the store and its catalog
    SIGKILLed while that build wrote DWD, then started again. That run failed; the next one
    (the script's second build) left every layer equal to the truth, asserted there line by
    line; what the dead run wrote on its branch was never published (refs, next test)."""
    killed = layers_on_s3["killed_run"]
    print(killed)
    assert killed["exit"] != 0
    # while it held the lock, a second scheduled build in the test's process was refused by
    # the lock (a row of an Iceberg table in the REST catalog) and wrote nothing
    assert killed["overlapping"] == {"refused": True, "mains_unchanged": True}, killed
    # the run that took its lock over recorded it in ops.wap_runs as abandoned, with its
    # branch (the load id before its own): so the branch expires like a red run's, here at
    # once (retention 0 h) in that same run's publish; main never saw it (the checks above)
    dead_load = killed["published"] - 1
    [(load_id, branch, status, message)] = killed["recorded"]
    assert (load_id, branch, status) == (dead_load, f"wap_{dead_load}", "abandoned"), killed
    assert re.fullmatch(
        "its process died holding the run lock; taken over by invocation [0-9a-f-]{36}", message
    ), message
    assert killed["branches_left"] == [], killed


def test_tables_live_in_the_bucket_and_views_in_the_built_in_catalog(store, layers_on_s3):
    _, env, data = store
    files = layers_on_s3["event_files"]
    assert files and all(f.startswith("s3://lakehouse/dwd/dwd_client__events/data/") for f in files)
    assert layers_on_s3["views"] == ["dim_users", "dim_videos"]
    # published through the REST catalog: main and each green run's tag (the run the store
    # died under published nothing), the run branches dropped
    refs = layers_on_s3["refs"]
    assert "main" in refs and len([r for r in refs if r.startswith("run_")]) == len(BUILT_AFTER)
    # (the run the store died under never reached this table; its ODS branch: below)
    assert not [r for r in refs if r.startswith("wap_")], refs
    # nothing of Iceberg's under the local data folder (the generator's truth files aside): its
    # metastore holds views and landing tables
    assert not list(data.rglob("*.metadata.json")) and not list(data.rglob("*.avro"))
    assert not [path for path in data.rglob("*.parquet") if "truth" not in path.parts]
    # another process with a metastore of its own (a new machine beside the same catalog and
    # bucket) builds the views again and reads them over the service's tables
    fresh = {**env, "LAKEHOUSE_METASTORE_DIR": str(data / "another-metastore")}
    rows = run_s3_process(fresh, SECOND_PROCESS)
    assert rows["dim_users"] == layers_on_s3["dim_users"] > 0
    assert rows["events"] == layers_on_s3["tables"]["dwd.dwd_client__events"]


def test_pyiceberg_reads_every_table_through_the_catalog_as_spark_does(store, layers_on_s3):
    catalog = rest_catalog(store)
    for name, rows in layers_on_s3["tables"].items():
        table = catalog.load_table(name)
        assert table.metadata_location.startswith(f"s3://lakehouse/{name.replace('.', '/')}/")
        assert table.scan().to_arrow().num_rows == rows, name
    for name, expected in layers_on_s3["ods"].items():
        read = (
            catalog.load_table(name)
            .scan(selected_fields=("_source_file", "_source_line", "_raw_line"))
            .to_arrow()
        )
        columns = read.to_pydict()
        rows = zip(
            columns["_source_file"], columns["_source_line"], columns["_raw_line"], strict=True
        )
        assert sorted(map(list, rows)) == expected, name
    # a merge-on-read dimension: pyiceberg applies its delete files as Spark does (at the
    # snapshot Spark read: the nightly maintenance has folded them into main since)
    state = catalog.load_table("dwd.dim_users__state")
    assert layers_on_s3["state_delete_files"] > 0
    scan = state.scan(snapshot_id=layers_on_s3["state_snapshot"], selected_fields=("user_id",))
    assert any(task.delete_files for task in scan.plan_files())
    assert sorted(scan.to_arrow().column(0).to_pylist()) == layers_on_s3["user_state"]


def test_a_red_run_and_the_nightly_maintenance_keep_every_published_row(layers_on_s3):
    """After the script's red run (it asserted every main unchanged and the event on the run's
    branch only) and a nightly run the store died under: the nightly maintenance on the
    bucket, with orphan-file removal listing the store beside a write in flight, ran on every
    Iceberg model without an error, compacted, kept the in-flight file, every row of main and
    the red run's branch."""
    nightly = layers_on_s3["nightly"]
    # before it, a nightly run in another process: the store SIGKILLed after one of its
    # compactions wrote a data file and before it committed, then restarted (that run failed)
    killed = nightly["compaction_killed"]
    print(killed)
    assert killed["exit"] != 0 and killed["written"], killed
    assert killed["committed"] == [0] * len(killed["written"]), killed
    assert nightly["errors"] == []
    assert {"ods_client__events", "dim_users__state", "dws_user__daily"} <= {
        name.split(".")[-1] for name in nightly["tables"]
    }
    assert nightly["orphans_listed"] and nightly["compacted"], nightly
    assert nightly["in_flight_kept"]
    assert sorted(nightly["rows_kept"]) == sorted(layers_on_s3["tables"])
    assert nightly["branch_rows"] == layers_on_s3["tables"]["ods.ods_client__events"] + 1


def test_the_change_feed_replays_into_the_truth_and_a_compaction_exports_nothing(layers_on_s3):
    """Two consumers of the users dimension, resuming after each build from the snapshot they
    last exported: `export-changes` comparing the merge-on-read state's snapshots, and
    `export-changes --changelog` reading what the builds appended to `dim_users__changes`
    (written on each run's branch, published with the state). Each replay equalled the
    generator's ground truth after every batch (asserted in the script); the export over the
    nightly compaction (and the red run, which moved no main) exported no change."""
    nightly = layers_on_s3["nightly"]
    for feed in ("change_feed", "changelog"):
        exported = nightly[feed]
        print(feed, exported)
        per_build, after_nightly = exported[: len(BUILT_AFTER)], exported[len(BUILT_AFTER)]
        assert all(e["moved"] for e in per_build), feed
        assert per_build[0]["insert"] > 0 and per_build[0]["delete"] == 0, feed
        changed = sum(e["update_after"] + e["delete"] + e["insert"] for e in per_build[1:])
        assert changed > 0 and sum(e["update_before"] for e in per_build[1:]) > 0, per_build
        assert [after_nightly[kind] for kind in CHANGE_TYPES] == [0, 0, 0, 0], after_nightly
    assert "dwd.dim_users__state" in nightly["compacted"]
    assert nightly["change_feed"][len(BUILT_AFTER)]["moved"], (
        "the compaction left nothing to export"
    )


def test_dbt_docs_lists_every_iceberg_table_with_its_columns_and_rows(layers_on_s3):
    """`dbt docs generate` after the second build: each Iceberg model and snapshot with its
    declared columns and the row count of its main snapshot (counted by Spark after it). The
    count is Iceberg's records in data files: the state whose delete files the build kept
    (the script's `maintenance_overrides`) shows more than a reader sees."""
    docs, counted = layers_on_s3["docs"], layers_on_s3["tables"]
    assert len(docs) >= 10 and "snapshot.lakehouse.dim_users_history" in docs
    for uid, entry in docs.items():
        assert entry["listed"] and set(entry["declared"]) <= set(entry["listed"]), (uid, entry)
        assert entry["stats"] is True, (uid, entry)
        if entry["table"] == "dwd.dim_users__state":
            assert entry["rows"] > counted[entry["table"]], entry
        else:
            assert entry["rows"] == counted[entry["table"]], (uid, entry)


def test_the_verification_scripts_hold_in_the_bucket(layers_on_s3):
    """verify-compaction and verify-time-travel on this target: their scratch tables in the
    REST catalog and the bucket, every outcome as documented, every read path (pyiceberg's
    through the store) returning what was written, and the bypassed validation still
    resurrecting the deleted row."""
    verify = layers_on_s3["verify"]
    print(verify)
    assert verify["location"].startswith("s3://lakehouse/"), verify["location"]
    assert len(verify["scenarios"]) == 6 and "5-spark-mor-v2" in verify["scenarios"]
    assert verify["compaction_results"] == 12 and verify["compaction_failures"] == []
    # the format-v3 scenario: its deletion vector refused by the store, not by Iceberg
    forbidden, [puffin] = verify["deletion_vectors_refused"]
    assert forbidden > 0 and puffin.startswith("s3://lakehouse/compaction/"), verify
    assert verify["resurrected"] == {"True": False, "False": True}
    assert verify["time_travel_failed"] == []
    assert {"sql VERSION AS OF", "option tag", "pyiceberg scan(snapshot_id)"} <= set(
        verify["time_travel_paths"]
    )


def test_merges_racing_maintenance_on_the_rest_catalog_never_lose_or_resurrect_a_row(
    layers_on_s3,
):
    """test_concurrency's interleavings (merges from one session, maintenance through dbt from
    another) on tables of the REST catalog: every commit is the service's pointer swap, the
    Hive lock plays no part."""
    summary = layers_on_s3["concurrency"]
    print(json.dumps(summary, indent=2))
    assert summary["interleavings"] == REST_INTERLEAVINGS
    assert_no_row_lost_and_the_races_real(summary)


# Retention and erasure on the bucket, in a process of their own after the tests above read
# the layers the first script left: both change rows for good
AFTER_THE_LAYERS = """
import json, os, sys, time
from types import SimpleNamespace
sys.path.insert(0, "tests/python")
from scripts.iceberg_java import IcebergTable
from scripts.landing import filesystem
from scripts.session import get_spark
from scripts.spark_config import dbt_env
from scripts.tasks import run_dbt

os.environ.update(dbt_env("s3"))  # dbt's profile, as run_dbt sets it

STARTED = time.monotonic()


def phase_done(name):
    print("PHASE", json.dumps([name, round(time.monotonic() - STARTED, 1)]), flush=True)


def dbt(args):  # in this process, every message kept
    from dbt.cli.main import dbtRunner
    messages = []
    done = dbtRunner(callbacks=[lambda event: messages.append(str(event.info.msg))]).invoke(
        [*args, "--target", "s3"])
    return SimpleNamespace(success=bool(done.success), log="\\n".join(messages))


spark = get_spark("s3")
tables = [f"{schema}.{table}" for schema in ("ods", "dwd", "dws") for table in spark.sql(
    f"select reflect('lakehouse.RestSessionCatalog', 'serviceTables', '{schema}')"
    " from values (1)").first()[0].split()]
# Retention on the bucket: the quarantine keeps 400 days by _loaded_at (dbt_project.yml);
# batch 1's rejects are aged 500 days (the clock, not the data) and the nightly deletes them,
# then expires the snapshots that held them (its tags and the red run's branch dropped as if
# they had aged too)
import pyarrow.parquet as pq
quarantine = "dwd.dwd_quarantine__rejected_records"
aged = "_batch_id = '000001'"
spark.sql(f"update {quarantine} set _loaded_at = _loaded_at - interval 500 days where {aged}")
kept_rows = sorted(map(list, spark.sql(f"select * from {quarantine} where not {aged}").collect()))
aged_rows = spark.sql(f"select count(*) from {quarantine} where {aged}").first()[0]
refs = spark.sql(f"select name, type from {quarantine}.refs where name != 'main'").collect()
for name, kind in refs:
    spark.sql(f"alter table {quarantine} drop {kind.lower()} `{name}`")
store_fs, _ = filesystem(str(IcebergTable(spark, quarantine).load().location()))


def batches_in(paths):  # {path: the _batch_id values its rows hold}, read with pyarrow
    found = {}
    for path in paths:
        with store_fs.open_input_file(path.split("://", 1)[1]) as source:
            found[path] = set(pq.read_table(source, columns=["_batch_id"]).column(0).to_pylist())
    return found


# every data file a snapshot held before the pass, and those of them holding an aged row
snapshot_files = [r[0] for r in spark.sql(f"select file_path from {quarantine}.all_files"
                                          " where content = 0").collect()]
held = [path for path, batches in batches_in(snapshot_files).items() if "000001" in batches]
expire_now = {"snapshot_retention_hours": 0, "min_snapshot_window_hours": 0,
              "snapshot_retain_last": 1, "snapshot_expiry_slack_hours": 0}
retention_run = dbt(["run-operation", "iceberg_maintain_all", "--args",
                     "{select: [dwd_quarantine__rejected_records], remove_orphans: false}",
                     "--vars", json.dumps(expire_now)])
assert retention_run.success, retention_run.log[-3000:]
live = [r[0] for r in spark.sql(f"select file_path from {quarantine}.all_files"
                                " where content = 0").collect()]
snapshots = [r[0] for r in spark.sql(f"select snapshot_id from {quarantine}.snapshots").collect()]
print("RETENTION", json.dumps({
    "aged_rows": aged_rows,
    "deleted_line": [line for line in retention_run.log.splitlines()
                     if line.startswith(f"maintenance {quarantine}:")],
    "kept_equal": sorted(map(list, spark.table(quarantine).collect())) == kept_rows,
    "kept_rows": len(kept_rows),
    "held": len(held),
    "held_left": [path for path in held
                  if store_fs.get_file_info(path.split("://", 1)[1]).type.name == "File"],
    "live_files": len(live),
    "batches_in_live_files": sorted({b for found in batches_in(live).values() for b in found if b}),
    "aged_in_snapshots": [spark.sql(f"select count(*) from {quarantine} version as of {s}"
                                    f" where {aged}").first()[0] for s in snapshots],
}, default=str), flush=True)
phase_done("retention")

# An erasure on request: the most active user leaves every table, snapshot and file of the
# bucket (test_warehouse.py checks the layers against the truth without the user)
from erased_keys import parquet_hits, snapshot_hits
subject = spark.sql("select cast(user_id as string) from dws.dws_user__daily"
                    " group by 1 order by count(*) desc, 1 limit 1").first()[0]
events = "dwd.dwd_client__events"
bucket, root = filesystem(str(IcebergTable(spark, events).load().location()).split("/dwd/")[0])
before = parquet_hits(bucket, root, [subject])
erase = dbt(["run-operation", "erase_subjects", "--args",
             json.dumps({"request": "DSR-S3", "user_ids": [int(subject)]})])
assert erase.success, erase.log[-3000:]
backfill = next(line for line in erase.log.splitlines() if " recompute: dbt build " in line)
assert run_dbt("s3", backfill.split(" recompute: dbt ", 1)[1].split()) == 0
finish = dbt(["run-operation", "erase_subjects", "--args", "{request: DSR-S3, finish: true}"])
assert finish.success, finish.log[-3000:]
files, hits = parquet_hits(bucket, root, [subject])
print("ERASURE", json.dumps({
    "subject": subject,
    "root": root,
    "hits_before": len(before[1]),
    "files": files,
    "hits": hits[:5],
    "snapshots": snapshot_hits(spark, tables, [subject]),
    "tables": tables,
    "recorded": dict(map(tuple, spark.sql("select concat(table_name, ' ', action), row_count"
                                          " from ops.erasures").collect())),
}), flush=True)
phase_done("erasure")
print("RESULT", json.dumps({}), flush=True)
"""


@pytest.fixture(scope="module")
def after_the_layers(store, layers_on_s3) -> dict:
    _, env, _ = store
    return run_s3_process(env, AFTER_THE_LAYERS, PHASES.with_name("s3-after-phases.json"))


def test_retention_on_the_bucket_deletes_old_rows_from_every_snapshot_and_file(
    store, after_the_layers
):
    """The script aged batch 1's rejects past the quarantine's 400 days and ran the nightly
    on it: the rows kept are exactly the others; every data file that held an aged row in
    a snapshot before the pass is gone from the bucket, and no file a snapshot still holds
    (read with pyarrow), no snapshot Spark reads and none pyiceberg reads has an aged row.
    (A file a dead write left unreferenced is orphan removal's, after its window.)"""
    retention = after_the_layers["retention"]
    assert retention["aged_rows"] > 0 and retention["kept_rows"] > 0, retention
    (line,) = retention["deleted_line"]
    assert f"delete_expired_rows removed {retention['aged_rows']} rows" in line, line
    assert retention["kept_equal"], retention
    assert retention["held"] > 0 and retention["held_left"] == [], retention
    assert retention["live_files"] > 0, retention
    assert "000001" not in retention["batches_in_live_files"], retention
    assert retention["aged_in_snapshots"] and set(retention["aged_in_snapshots"]) == {0}
    table = rest_catalog(store).load_table("dwd.dwd_quarantine__rejected_records")
    for snapshot in table.metadata.snapshots:
        read = table.scan(snapshot_id=snapshot.snapshot_id, selected_fields=("_batch_id",))
        assert "000001" not in set(read.to_arrow().column(0).to_pylist()), snapshot


def test_an_erased_user_is_in_no_file_of_the_bucket_and_no_snapshot_of_the_catalog(
    store, after_the_layers
):
    """The script's last phase erased one user (erase_subjects, its backfill, its finish): no
    Parquet file of the bucket holds them (read with pyarrow's S3 client, not through Spark or
    Iceberg), no snapshot or ref Spark reads, and none pyiceberg reads through the catalog."""
    erasure = after_the_layers["erasure"]
    subject = erasure["subject"]
    assert erasure["hits_before"] > 0, "the scan must find the user before the erasure"
    assert erasure["files"] > 0 and erasure["hits"] == [], erasure
    read, hits = erasure["snapshots"]
    assert read > 0 and hits == [], erasure["snapshots"]
    assert erasure["recorded"]["dwd.dwd_client__events delete"] > 0, erasure["recorded"]
    catalog = rest_catalog(store)
    written = written_pattern([subject])
    scanned = 0
    for name in after_the_layers["erasure"]["tables"]:
        table = catalog.load_table(name)
        columns = {field.name for field in table.schema().fields}
        subject_columns = [c for c in ("user_id", "author_user_id") if c in columns]
        raw = [c for c in ("_raw_line", "raw_record") if c in columns]
        if not subject_columns and not raw:
            continue
        versions = {s.snapshot_id for s in table.metadata.snapshots}
        versions |= {ref.snapshot_id for ref in table.metadata.refs.values()}
        for version in versions:
            rows = table.scan(snapshot_id=version, selected_fields=(*subject_columns, *raw))
            data = rows.to_arrow().to_pydict()
            scanned += 1
            for column in subject_columns:
                assert subject not in {str(v) for v in data[column]}, (name, version, column)
            for column in raw:
                assert not [t for t in data[column] if t and written.search(t)], (name, version)
    assert scanned > 0


def test_the_jars_are_verified_and_a_fetch_that_fails_says_what_to_do(
    store, layers_on_s3, tmp_path, monkeypatch
):
    _, _, data = store
    jars = cached_jars(data / "jars")  # fetched for the Spark process
    assert jars and [jar.name for jar in jars] == list(JARS)
    # a jar cut short is no longer the verified one
    copy = tmp_path / "jars"
    copy.mkdir()
    for jar in jars:
        (copy / jar.name).symlink_to(jar)
    (copy / ".verified").write_text((data / "jars" / ".verified").read_text().replace(" ", " 1"))
    assert cached_jars(copy) is None
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # no registry
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    with pytest.raises(JarsMissing, match=r"could not download sagemaker-pyspark==1\.4\.5"):
        fetch(tmp_path / "elsewhere", log=lambda _: None)


def current_snapshots(store, tables) -> dict[str, int | None]:
    catalog = rest_catalog(store)
    return {name: catalog.load_table(name).metadata.current_snapshot_id for name in tables}


def test_a_build_while_the_services_are_down_fails_at_once_and_changes_nothing(store, layers_on_s3):
    """Plain `dbt build --target s3` with the store and its catalog stopped: it stops before
    Spark starts, saying what to run; restarted, the services hold every table as it was."""
    settings, env, _ = store
    before = current_snapshots(store, layers_on_s3["tables"])
    services.stop(settings, log=lambda _: None)
    try:
        started = time.monotonic()
        done = subprocess.run(
            [str(DBT), "build", "--target", "s3", "--profiles-dir", "profiles"],
            cwd=PROJECT_DIR,
            env=process_env(env),
            capture_output=True,
            text=True,
            timeout=300,
        )
        seconds = time.monotonic() - started
    finally:
        services.start(settings, log=lambda _: None)
    assert done.returncode != 0
    assert "does not answer" in done.stdout, done.stdout[-3000:]
    assert "start it with `lakehouse-services start`" in done.stdout
    assert seconds < 60, seconds  # no JVM started, no retries for minutes
    assert current_snapshots(store, layers_on_s3["tables"]) == before


def test_a_wrong_key_or_a_missing_bucket_stops_the_session_naming_the_fix(store, monkeypatch):
    settings, _, _ = store
    landing = settings.landing
    check_before_session(settings, landing)  # as the services are: nothing to say
    with pytest.raises(ServiceError, match=r"does not exist.*`lakehouse-services start` creates"):
        check_before_session(settings, "s3a://no-such-bucket/landing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(ServiceError, match="refused AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"):
        check_before_session(settings, landing)


def test_stop_leaves_no_process_and_no_port(store):
    settings, _, _ = store
    services.stop(settings, log=lambda _: None)
    assert not any(ok for name, ok, _ in services.status(settings) if name != "ready")
    assert not [p for p in settings.ports().values() if listening_addresses(p)]
    services.start(settings, log=lambda _: None)  # the fixture's teardown stops it again
