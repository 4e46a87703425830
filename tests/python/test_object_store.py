"""The `s3` target's services and catalog: SeaweedFS (S3 API + Iceberg REST catalog) started
by `lakehouse-services` on free loopback ports with keys of this test run, the S3A jars
fetched and verified, and a Spark process of the `s3` target whose Iceberg tables land in the
bucket and the REST catalog while its views and landing tables stay in Spark's built-in catalog:
three scheduled `dbt build`s, each layer checked against the truth after each, then pyiceberg
reading every table through the REST catalog.

One set of services for the file; the Spark side runs in a process of its own (pytest's
session is the `ci` target's)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cluster import is_loopback, listening_addresses
from test_concurrency import assert_no_row_lost_and_the_races_real

from scripts import services
from scripts.object_store import ServiceError
from scripts.s3a_jars import JARS, JarsMissing, cached_jars, fetch
from scripts.services import check_before_session
from scripts.spark_config import PROJECT_DIR

DBT = Path(sys.executable).with_name("dbt")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """Running services, and the environment a process of the `s3` target needs (only that:
    pytest's own LAKEHOUSE_* settings, its landing folder above all, must not leak into it)."""
    data = tmp_path_factory.mktemp("s3target")
    keys = {"AWS_ACCESS_KEY_ID": "lakehouse-test", "AWS_SECRET_ACCESS_KEY": secrets.token_hex(16)}
    settings = services.on_free_ports(data / "services")
    env = {"LAKEHOUSE_DATA_DIR": str(data), **keys, **settings.process_env()}
    saved = {name: os.environ.get(name) for name in keys}
    os.environ.update(keys)  # this process signs its S3 calls with them too
    try:
        services.start(settings, log=print)
        yield settings, env, data
    finally:
        services.stop(settings, log=print)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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


def process_env(env: dict[str, str]) -> dict[str, str]:
    """A process of the `s3` target: the store's environment, dbt's target/ and logs in the
    data folder (not the checkout's, which pytest's own dbt runs use)."""
    own = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEHOUSE_", "DBT_"))}
    data = Path(env["LAKEHOUSE_DATA_DIR"])
    return {
        **own,
        **env,
        "LAKEHOUSE_DRIVER_MEMORY": "1g",
        "DBT_TARGET_PATH": str(data / "target"),
        "DBT_LOG_PATH": str(data / "logs"),
    }


def run_s3_process(env: dict[str, str], script: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_DIR,
        env=process_env(env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reports = {  # the script's "RESULT {json}" line, and any other "TAG {json}" line
        line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1])
        for line in done.stdout.splitlines()
        if line.split(" ", 1)[0] in ("RESULT", "NIGHTLY", "CONCURRENCY")
    }
    return {**reports.pop("RESULT"), **{tag.lower(): report for tag, report in reports.items()}}


def rest_catalog(store):
    """pyiceberg on the REST catalog, with the keys of this test run."""
    from pyiceberg.catalog import load_catalog

    settings, env, _ = store
    return load_catalog(
        "rest",
        type="rest",
        uri=settings.catalog_uri,
        warehouse=settings.warehouse,
        credential=f"{env['AWS_ACCESS_KEY_ID']}:{env['AWS_SECRET_ACCESS_KEY']}",
        **{
            "oauth2-server-uri": f"{settings.catalog_uri}/v1/oauth/tokens",
            "s3.endpoint": settings.s3_endpoint,
            "s3.access-key-id": env["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": env["AWS_SECRET_ACCESS_KEY"],
            "s3.region": "us-east-1",
        },
    )


# -- the layers on the s3 target, batch by batch ---------------------------------------------

BATCHES = 3
LAYERS = """
import json, os, signal, subprocess, sys
from types import SimpleNamespace
sys.path.insert(0, "tests/python")
from layers import (assert_events_reconcile_per_file, assert_landed_lines_in_ods_once,
                    assert_user_history, check_layers)
from scripts.generate_landing import LandingGenerator, Scale
from scripts.iceberg_java import IcebergTable
from scripts.landing import MARKER, LandingZone, filesystem, join
from scripts.session import get_spark
from scripts.spark_config import DataPaths
from scripts.tasks import run_dbt
from scripts import services
from scripts.object_store import ServiceSettings

data = DataPaths.for_target("s3")
assert data.landing.startswith("s3a://"), data.landing  # the bucket, never a local folder
zone = LandingZone(data.landing)
spark = get_spark("s3")
KILLED = {}


def kill_the_store_during_a_build():
    # a scheduled build in another process (the scheduler's run); the store and its catalog
    # SIGKILLed once that build writes DWD (ODS is on its branch), then started again
    settings = ServiceSettings.from_env(data.root)
    # on another node: a metastore of its own (embedded Derby admits one process)
    node = {**os.environ, "LAKEHOUSE_METASTORE_DIR": str(data.root / "scheduler-metastore")}
    run = subprocess.Popen([sys.executable, "-c", "from scripts.tasks import run_dbt; "
                            "raise SystemExit(run_dbt('s3', ['build']))"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=node)
    for line in run.stdout:
        if "START sql incremental model dwd.dwd_client__events" in line:
            store = json.loads((settings.root / "state.json").read_text())["pid"]
            os.killpg(store, signal.SIGKILL)
            break
    else:
        raise AssertionError("the build never reached dwd_client__events")
    try:  # the run fails on its own, or its scheduler kills it
        out, _ = run.communicate(timeout=180)
        ended = "failed on its own"
    except subprocess.TimeoutExpired:
        run.kill()
        out, _ = run.communicate()
        ended = "killed after 180 s"
    assert run.returncode != 0, out[-3000:]
    services.start(settings, log=lambda _: None)
    return {"ended": ended, "exit": run.returncode}

for batch in range(1, BATCHES + 1):
    scale = Scale(users=200, videos=60, events_per_batch=600, batches=batch,
                  min_changes_per_batch=12)
    LandingGenerator(data.root, 12, scale, landing=data.landing).run(log=lambda _: None)
    if batch == 2:  # the events writer is mid-batch: files there, the marker not yet
        pending = zone.batch_folder("client_events", 2)
        zone.fs.delete_file(join(pending, MARKER))
    if batch == BATCHES:  # first, the scheduled run in whose middle the store dies
        KILLED.update(kill_the_store_during_a_build())
    # the last build leaves the merge-on-read state's delete files (its post-hook folds
    # them otherwise) for pyiceberg to apply
    keep_deletes = {"dim_users__state": {"rewrite_data_files": None,
                                         "rewrite_position_delete_files": None}}
    variables = {"maintenance_overrides": keep_deletes} if batch == BATCHES else {}
    assert run_dbt("s3", ["build", "--vars", json.dumps(variables)]) == 0, f"batch {batch}"
    # ODS holds every line of the complete batches once and nothing of the pending one; the
    # next run's generator rewrites the pending files (same names, same bytes) and marks them
    lines = assert_landed_lines_in_ods_once(spark, data.landing)
    assert_events_reconcile_per_file(spark)
    check_layers(spark, data.root, batch, landing=data.landing)
    assert_user_history(spark, data.root, batch)
    if batch == BATCHES:  # what the run the store died under left behind
        KILLED["branches_left"] = sorted(
            r.name for r in spark.sql("select name from ods.ods_client__events.refs").collect()
            if r.name.startswith("wap_"))
    if batch == 2:
        held = sum(len(zone.lines(path)) for path in zone.visible_files("client_events")
                   if "/batch=000002/" in path)
        loaded = spark.sql("select count(*) from ods.ods_client__events"
                           " where _source_file like '%/batch=000002/%'").first()[0]
        assert held > 0 and loaded == 0, (held, loaded)
    print("BATCH", batch, json.dumps(lines), flush=True)

tables = {}  # every Iceberg table of the service
for schema in ("ods", "dwd", "dws"):
    listed = spark.sql(
        f"select reflect('lakehouse.RestSessionCatalog', 'serviceTables', '{schema}')"
        " from values (1)"
    ).first()[0]
    for table in listed.split():
        tables[f"{schema}.{table}"] = spark.table(f"{schema}.{table}").count()
ods = {}
for name in (t for t in tables if t.startswith("ods.")):
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
in_flight = IcebergTable(spark, "spark_catalog.dwd.dim_users__state").write_data_file(
    [{"user_id": 9_000_000_001}], prefix="in-flight")
store, path = filesystem(str(in_flight.location()))
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
}), flush=True)

# Merges and maintenance racing on merge-on-read tables of the REST catalog, where a commit is
# the service's atomic swap (no Hive lock): test_concurrency's interleavings, its checks
from dbt.cli.main import dbtRunner
from test_concurrency import run_interleaving, seeds, summarize


def dbt(args, expect_success=True):
    messages = []
    done = dbtRunner(callbacks=[lambda event: messages.append(str(event.info.msg))]).invoke(
        [*args, "--target", "s3"])
    return SimpleNamespace(success=bool(done.success), log="\\n".join(messages))


print("CONCURRENCY", json.dumps(summarize([run_interleaving(spark, dbt, s) for s in seeds()])),
      flush=True)
""".replace("BATCHES", str(BATCHES))


@pytest.fixture(scope="module")
def layers_on_s3(store) -> dict:
    _, env, _ = store
    return run_s3_process(env, LAYERS)


def test_every_layer_equals_the_truth_batch_by_batch_on_the_s3_target(layers_on_s3):
    """The script above asserted, after each of the three scheduled builds: every landed line
    in ODS once, every event file reconciled, both dimensions equal to the generator's ground
    truth, both DWS tables equal to a pandas recomputation, the SCD-2 history."""
    tables = layers_on_s3["tables"]
    assert {"ods.ods_client__events", "dwd.dim_users__state", "dws.dws_user__daily"} <= set(tables)
    assert all(rows > 0 for name, rows in tables.items() if "quarantine" not in name), tables


def test_the_store_killed_in_a_build_then_restarted_the_next_run_is_exact(layers_on_s3):
    """Before the third build: a scheduled build in another process, the store and its catalog
    SIGKILLed while that build wrote DWD, then started again. That run failed; the next one
    (the script's third build) left every layer equal to the truth, asserted there line by
    line; what the dead run wrote on its branch was never published (refs, next test)."""
    killed = layers_on_s3["killed_run"]
    print(killed)
    assert killed["exit"] != 0
    # its branch outlives it: no row in ops.wap_runs, so no retention ever drops it (a leak
    # recorded in docs/findings.md, found here); main never saw it (the checks above)
    assert len(killed["branches_left"]) == 1, killed


def test_tables_live_in_the_bucket_and_views_in_the_built_in_catalog(store, layers_on_s3):
    _, env, data = store
    files = layers_on_s3["event_files"]
    assert files and all(f.startswith("s3://lakehouse/dwd/dwd_client__events/data/") for f in files)
    assert layers_on_s3["views"] == ["dim_users", "dim_videos"]
    # published through the REST catalog: main and each green run's tag (the run the store
    # died under published nothing), the run branches dropped
    refs = layers_on_s3["refs"]
    assert "main" in refs and len([r for r in refs if r.startswith("run_")]) == BATCHES, refs
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
    branch only): the nightly maintenance on the bucket, with orphan-file removal listing the
    store beside a write in flight, ran on every Iceberg model without an error, compacted,
    kept the in-flight file, every row of main and the red run's branch."""
    nightly = layers_on_s3["nightly"]
    assert nightly["errors"] == []
    assert {"ods_client__events", "dim_users__state", "dws_user__daily"} <= {
        name.split(".")[-1] for name in nightly["tables"]
    }
    assert nightly["orphans_listed"] and nightly["compacted"], nightly
    assert nightly["in_flight_kept"]
    assert sorted(nightly["rows_kept"]) == sorted(layers_on_s3["tables"])
    assert nightly["branch_rows"] == layers_on_s3["tables"]["ods.ods_client__events"] + 1


def test_merges_racing_maintenance_on_the_rest_catalog_never_lose_or_resurrect_a_row(
    layers_on_s3,
):
    """test_concurrency's interleavings (merges from one session, maintenance through dbt from
    another) on tables of the REST catalog: every commit is the service's pointer swap, the
    Hive lock plays no part."""
    summary = layers_on_s3["concurrency"]
    print(json.dumps(summary, indent=2))
    assert summary["interleavings"] >= 20
    assert_no_row_lost_and_the_races_real(summary)


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
