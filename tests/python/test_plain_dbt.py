"""Plain `dbt`, as CI/CD and an analytics engineer run it: the venv's `dbt` executable in a
subprocess, on a fresh data folder, with nothing but `--profiles-dir profiles`.

No wrapper and no exported Spark settings: the project's dbt adapter (`type: lakehouse`)
starts the session from scripts/spark_config.py and creates the metastore's lock tables. One module
fixture builds once (about a minute of JVM start and build here); the tests read its
artifacts and run the other commands on the same folder, in file order.

What these commands build is checked in pytest's own session, where a test needs no process
of its own: the snapshots' second and third runs against the ground truth in
test_warehouse.py, a full refresh failing while Spark runs it in
test_dbt_materializations.py. Each command here is a JVM start and a minute of CPU.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from plain_dbt import DBT, PlainDbt, main_table, ok, table_refs
from scratch_project import copy_project

from dbt.adapters.lakehouse.connections import SESSION_BESIDE_PARSE
from scripts.generate_landing import main as generate_landing
from scripts.spark_config import PROJECT_DIR


def land(data: Path, batches: int) -> None:
    """Land batches 1..n, deterministic from the seed."""
    generate_landing(
        ["--out", str(data), "--users", "200", "--videos", "50", "--events-per-batch", "300",
         "--batches", str(batches)]
    )  # fmt: skip


@pytest.fixture(scope="module")
def plain_dbt(tmp_path_factory: pytest.TempPathFactory) -> PlainDbt:
    data = tmp_path_factory.mktemp("plain_dbt")
    land(data, batches=1)
    dbt = PlainDbt(data=data, target_path=data / "target", project=PROJECT_DIR)
    ok(dbt("build"))
    print(f"plain dbt build on a fresh data folder: {dbt.seconds:.0f} s")
    return dbt


def test_build_on_a_fresh_data_folder(plain_dbt: PlainDbt):
    results = plain_dbt.artifact("run_results.json")["results"]
    assert results and all(r["status"] in ("success", "pass") for r in results)
    models = {r["unique_id"] for r in results if r["unique_id"].startswith("model.")}
    assert "model.lakehouse.dim_users" in models and "model.lakehouse.dws_video__daily" in models
    # the default selector builds the dimensions' history too: the snapshots' first run
    assert {"snapshot.lakehouse.dim_users_history", "snapshot.lakehouse.dim_videos_history"} <= {
        r["unique_id"] for r in results
    }
    # the session was the project's: warehouse and metastore under the fresh data folder
    assert (plain_dbt.data / "metastore" / "metastore_db").is_dir()
    assert any((plain_dbt.data / "warehouse").rglob("*.parquet"))
    # and its JVM started while dbt parsed the project, not after
    log = (plain_dbt.data / "logs" / "dbt.log").read_text().splitlines()
    beside = [i for i, line in enumerate(log) if SESSION_BESIDE_PARSE in line]
    parsed = next(i for i, line in enumerate(log) if re.search(r"Found \d+ models", line))
    assert beside and beside[0] < parsed, "the session did not start beside the parse"


def table_folder(warehouse: Path, table: str) -> Path:
    """The folder of `table` (schema.name) under `warehouse`."""
    schema, name = table.split(".")
    return warehouse / f"{schema}.db" / name


def main_rows(warehouse: Path, table: str, ref: str = "main") -> list[tuple]:
    """The rows of `table` (schema.name) as readers of main (or of `ref`) see them, columns
    whose names start with `_` (load times) left out, sorted."""
    frame = main_table(table_folder(warehouse, table), ref).to_pandas()
    frame = frame[[c for c in frame.columns if not c.startswith("_")]]
    return sorted(frame.astype(str).itertuples(index=False, name=None))


COMPARED = ("dwd.dwd_client__events", "dwd.dim_users__state", "dws.dws_user__daily",
            "dws.dws_video__daily")  # fmt: skip


def test_dagster_runs_the_next_scheduled_build_and_publishes_it(
    plain_dbt: PlainDbt, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
):
    """The Dagster code location's job (orchestration/definitions.py) as the next scheduled
    run on the warehouse plain dbt built above, its second batch landed: one `dbt build
    --selector every_batch` in a dbt process of its own, write-audit-publish on. It publishes:
    main of every table serves its run tag's rows, the users' state is the ground truth of
    both batches, and every model and snapshot is reported as a materialization carrying the
    outcome. Then a batch with an event of an unknown user: the run is red, the job fails
    naming the branch to inspect, and main is unchanged."""
    from dagster import DagsterInstance, materialize

    data = plain_dbt.data
    land(data, batches=2)  # batch 1 again, the same bytes, and batch 2
    for name in [k for k in os.environ if k.startswith(("LAKEHOUSE_", "DBT_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(data))
    monkeypatch.setenv("LAKEHOUSE_DRIVER_MEMORY", "1g")  # beside pytest's own JVM
    monkeypatch.setenv("LAKEHOUSE_JIT", "quick")
    monkeypatch.setenv("LAKEHOUSE_GC", "parallel")
    monkeypatch.setenv("PYTHONPATH", str(PROJECT_DIR))
    # loaded in the runs' environment, as a code server is: the runs reuse the parse it makes
    # at load only if it read the same environment variables (the profile's)
    from orchestration.definitions import defs, lakehouse_dbt

    home = tmp_path_factory.mktemp("dagster_home")
    instance = DagsterInstance.local_temp(str(home))  # SQLite storage
    resources = {"dbt": defs.resources["dbt"]}

    green = materialize([lakehouse_dbt], resources=resources, instance=instance)
    assert green.success
    tags = instance.get_run_by_id(green.run_id).tags
    assert tags["lakehouse/write-audit-publish"] == "published" and tags["lakehouse/load_id"] == "2"
    materialized = {
        e.asset_key.to_user_string(): e.step_materialization_data.materialization.metadata
        for e in green.get_asset_materialization_events()
    }
    assert {"dwd/dim_users_history", "dws/dws_user__daily", "ods/ods_client__events"} <= set(
        materialized
    )
    assert materialized["dws/dws_user__daily"]["write-audit-publish"].value == "published in run 2"
    # the job names the default selector: it tested every row it wrote, so the next scheduled
    # run's tests read only the loads after it
    runs = main_table(data / "warehouse" / "ops.db" / "wap_runs").to_pylist()
    assert sorted((run["load_id"], run["status"], run["tested"]) for run in runs) == [
        (1, "published", True),
        (2, "published", True),
    ]
    # main serves what the run wrote: its tag's rows (maintenance after the publish may have
    # compacted main since, the rows unchanged)
    for table in COMPARED:
        refs = table_refs(table_folder(data / "warehouse", table))
        assert refs["run_2"] != refs["run_1"], (table, refs)
        published = main_rows(data / "warehouse", table)
        assert published and published == main_rows(data / "warehouse", table, "run_2"), table
    state = main_table(data / "warehouse" / "dwd.db" / "dim_users__state").to_pandas()
    truth = pd.read_parquet(data / "truth" / "users" / "batch=000002.parquet")
    assert set(state[~state["_is_deleted"]]["user_id"]) == set(truth["user_id"]) != set()

    before = {table: main_rows(data / "warehouse", table) for table in COMPARED}
    land(data, batches=3)
    landed = data / "landing" / "client_events" / "batch=000003"
    event = json.loads(next(landed.glob("part-*.jsonl")).read_text().splitlines()[0])
    event.update(event_id="ev-unknown-user", user_id="999999", _kafka_partition=9,
                 _kafka_offset=900_000_001)  # fmt: skip
    (landed / "part-late.jsonl").write_text(json.dumps(event) + "\n")
    red = materialize([lakehouse_dbt], resources=resources, instance=instance, raise_on_error=False)
    assert not red.success
    tags = instance.get_run_by_id(red.run_id).tags
    assert tags["lakehouse/write-audit-publish"] == "red" and tags["lakehouse/branch"] == "wap_3"
    failure = red.get_step_failure_events()[0].step_failure_data.user_failure_data
    assert "version as of 'wap_3'" in failure.description
    assert "assert_event_users_and_videos_known" in failure.description
    assert not red.get_asset_materialization_events()
    assert {table: main_rows(data / "warehouse", table) for table in COMPARED} == before


def test_docs_generate_lists_every_iceberg_table_with_columns_and_stats(plain_dbt: PlainDbt):
    ok(plain_dbt("docs", "generate"))
    catalog = plain_dbt.artifact("catalog.json")["nodes"]
    manifest = plain_dbt.artifact("manifest.json")["nodes"]
    iceberg = [
        uid
        for uid, node in manifest.items()
        if node["resource_type"] in ("model", "snapshot")
        and node["config"].get("file_format") == "iceberg"
        and node["config"]["materialized"] in ("table", "incremental", "snapshot")
    ]  # (a view, e.g. ods_landing__undeclared_fields, is no Iceberg table and has no stats)
    assert len(iceberg) >= 10 and "snapshot.lakehouse.dim_users_history" in iceberg
    for uid in iceberg:
        assert uid in catalog, f"{uid} missing from catalog.json"
        entry = catalog[uid]
        declared = set(manifest[uid]["columns"])
        assert declared <= set(entry["columns"]), (uid, declared - set(entry["columns"]))
        assert entry["columns"], uid
        assert entry["stats"]["has_stats"]["value"] is True, uid


def test_source_freshness_reads_the_landing_file_listings(plain_dbt: PlainDbt):
    """Freshness is the age of the newest landed file. Age every file by four days: past the
    error thresholds of both sources (24 h and 72 h), which a scheduler sees as exit code 1."""
    four_days_ago = time.time() - 4 * 86400
    for path in (plain_dbt.data / "landing").rglob("*"):
        if path.is_file():
            os.utime(path, (four_days_ago, four_days_ago))
    result = plain_dbt("source", "freshness")
    sources = {r["unique_id"]: r for r in plain_dbt.artifact("sources.json")["results"]}
    assert set(sources) == {
        "source.lakehouse.client.events_files",
        "source.lakehouse.appdb.user_changes_files",
        "source.lakehouse.appdb.video_changes_files",
    }
    stamp = time.strftime("%Y-%m-%dT%H", time.gmtime(four_days_ago))
    for uid, source in sources.items():
        assert source["status"] == "error", (uid, source["status"])
        assert source["max_loaded_at"].startswith(stamp), (uid, source["max_loaded_at"])
    assert result.returncode == 1  # error freshness is a failing exit code a scheduler sees


def test_nightly_maintenance_operation(plain_dbt: PlainDbt):
    nightly = ("run-operation", "iceberg_maintain_all", "--args", "{remove_orphans: false}")
    result = ok(plain_dbt(*nightly))
    assert "maintenance " in result.stdout and "dim_users" in result.stdout


@pytest.fixture(scope="module")
def project_copy(plain_dbt: PlainDbt, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's dbt files in a scratch folder, to change a model or add a test."""
    return copy_project(tmp_path_factory.mktemp("project"), also=("profiles",))


def edit(path: Path, change: Callable[[str], str]) -> None:
    path.write_text(change(path.read_text()))


def test_slim_ci_selects_only_the_modified_model_and_its_children(
    plain_dbt: PlainDbt, project_copy: Path
):
    state = plain_dbt.data / "prod-state"
    state.mkdir()
    shutil.copy(plain_dbt.target_path / "manifest.json", state / "manifest.json")
    edit(project_copy / "models/dws/dws_user__daily.sql", lambda sql: sql + "\n-- changed\n")
    listed = ok(
        plain_dbt(
            "ls",
            "-s",
            "state:modified+",
            "--state",
            str(state),
            "--resource-type",
            "model",
            "--output",
            "name",
            "--quiet",
            project=project_copy,
        )
    )
    assert listed.stdout.split() == ["dws_user__daily"]


def test_a_failing_test_exits_1_and_names_the_node_then_retry_reruns_only_it(
    plain_dbt: PlainDbt, project_copy: Path
):
    (project_copy / "tests/dbt/assert_always_fails.sql").write_text(
        "-- a deliberately failing data test\nselect 1 as failure\n"
    )
    failed = plain_dbt("test", "-s", "assert_always_fails", "dim_users", project=project_copy)
    assert failed.returncode == 1, failed.stdout[-3000:]
    results = plain_dbt.artifact("run_results.json")["results"]
    statuses = {r["unique_id"]: r["status"] for r in results if r["unique_id"].startswith("test.")}
    assert statuses.pop("test.lakehouse.assert_always_fails") == "fail"
    assert statuses and set(statuses.values()) == {"pass"}  # dim_users' own tests

    retried = plain_dbt("retry", project=project_copy)
    assert retried.returncode == 1  # the test still fails: retry re-ran it
    rerun = [
        r["unique_id"]
        for r in plain_dbt.artifact("run_results.json")["results"]
        if r["unique_id"].startswith("test.")
    ]
    assert rerun == ["test.lakehouse.assert_always_fails"]


def test_a_missing_java_runtime_fails_at_once_saying_what_to_run(tmp_path: Path):
    """No Java on the machine: plain `dbt build` must stop within 30 s with a message that
    names the fix, not hang on a session that cannot start."""
    env = {
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "PATH": str(DBT.parent),  # the venv's executables only: no `java` anywhere
        "JAVA_HOME": str(tmp_path / "no-jdk-here"),
        "LAKEHOUSE_DATA_DIR": str(tmp_path / "data"),
        "DBT_TARGET_PATH": str(tmp_path / "target"),
        "DBT_LOG_PATH": str(tmp_path / "logs"),
        "PYTHONPATH": str(PROJECT_DIR),
    }
    started = time.monotonic()
    result = subprocess.run(
        [str(DBT), "build", "--profiles-dir", "profiles"],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    seconds = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode == 2, output[-3000:]
    assert "No Java 17 (or 11) runtime found" in output and "make setup" in output, output
    assert seconds < 30, f"the missing runtime took {seconds:.0f} s to report"
