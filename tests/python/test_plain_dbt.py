"""Plain `dbt`, as CI/CD and an analytics engineer run it: the venv's `dbt` executable in a
subprocess, on a fresh data folder, with nothing but `--profiles-dir profiles`.

No wrapper and no exported Spark settings: the project's dbt adapter (`type: lakehouse`)
starts the session from scripts/spark_config.py and creates the metastore's lock tables. One module
fixture builds once (about a minute of JVM start and build here); the tests read its
artifacts and run the other commands on the same folder, in file order. The build holds one
landing batch (its snapshots' first run); the last tests land batch 2, which changes and
deletes users, take the second snapshot and refresh a table in a way that fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from layers import USER_HISTORY_COLUMNS, expected_user_history

from scripts.generate_landing import main as generate_landing
from scripts.spark_config import PROJECT_DIR

DBT = Path(sys.executable).with_name("dbt")
TIMEOUT_S = 600  # a hang (the old MetastoreLock.findLock wait) fails instead of blocking CI


@dataclass
class PlainDbt:
    data: Path
    target_path: Path  # dbt's target/ (manifest, run_results, catalog)
    project: Path
    seconds: float = 0.0

    def __call__(self, *args: str, project: Path | None = None) -> subprocess.CompletedProcess:
        project = project or self.project
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKEHOUSE_", "DBT_"))}
        env.update(
            LAKEHOUSE_DATA_DIR=str(self.data),
            LAKEHOUSE_DRIVER_MEMORY="1g",  # beside pytest's own JVM
            DBT_TARGET_PATH=str(self.target_path),
            DBT_LOG_PATH=str(self.data / "logs"),
            # The shared venv may be an editable install of another checkout: put this one
            # first so dbt finds this checkout's adapter (a `make setup` venv needs nothing).
            PYTHONPATH=str(PROJECT_DIR),
        )
        started = time.monotonic()
        result = subprocess.run(
            [str(DBT), *args, "--profiles-dir", "profiles"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        self.seconds = time.monotonic() - started
        return result

    def artifact(self, name: str) -> dict:
        return json.loads((self.target_path / name).read_text())


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return result


def show(dbt: PlainDbt, sql: str) -> list[dict]:
    """The rows of a query, read through plain dbt (its own session on the data folder)."""
    result = ok(dbt("show", "--inline", sql, "--output", "json", "--limit", "-1", "--quiet"))
    return json.loads(result.stdout[result.stdout.index("{") :])["show"]


def nodes(dbt: PlainDbt) -> list[dict]:
    """The last command's results, without the project's on-run-start/-end hooks."""
    results = dbt.artifact("run_results.json")["results"]
    return [r for r in results if not r["unique_id"].startswith("operation.")]


def node_statuses(dbt: PlainDbt) -> dict[str, str]:
    return {r["unique_id"]: r["status"] for r in nodes(dbt)}


def land(data: Path, batches: int) -> None:
    """Land batches 1..n, deterministic from the seed (batches already there stay as they are)."""
    generate_landing(
        ["--out", str(data), "--users", "200", "--videos", "50", "--events-per-batch", "300",
         "--batches", str(batches)]
    )  # fmt: skip


def users_truth(data: Path, batch: int) -> pd.DataFrame:
    """The source `users` table after `batch`, from the generator's ground truth."""
    truth = pd.read_parquet(data / "truth" / "users" / f"batch={batch:06d}.parquet")
    return truth.rename(columns={"level": "user_level"}).set_index("user_id")


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
    copy = tmp_path_factory.mktemp("project")
    for name in ("dbt_project.yml", "selectors.yml"):
        shutil.copy(PROJECT_DIR / name, copy / name)
    for folder in ("models", "macros", "snapshots", "profiles", "tests/dbt"):
        shutil.copytree(PROJECT_DIR / folder, copy / folder)
    return copy


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


# -- SCD-2 history across a change and a delete, then a full refresh that fails ----------------


def test_snapshot_twice_closes_changed_and_deleted_users(plain_dbt: PlainDbt):
    """The build took the first snapshot of batch 1. Land batch 2 (users changed and deleted
    at the source) and build the layers again, snapshots included (one process, no tests):
    the snapshots' second run is the one dbt-adapters #489 refused on Iceberg."""
    land(plain_dbt.data, batches=2)
    before, after = users_truth(plain_dbt.data, 1), users_truth(plain_dbt.data, 2)
    columns = USER_HISTORY_COLUMNS
    deleted = before.index.difference(after.index)
    changed = [
        k for k in before.index.intersection(after.index)
        if before.loc[k, columns].tolist() != after.loc[k, columns].tolist()
    ]  # fmt: skip
    assert len(deleted) and changed  # the seed's batch 2 does both

    ok(plain_dbt("build", "--exclude", "resource_type:test", "resource_type:unit_test"))
    snapshots = {k: v for k, v in node_statuses(plain_dbt).items() if k.startswith("snapshot.")}
    assert snapshots == {
        "snapshot.lakehouse.dim_users_history": "success",
        "snapshot.lakehouse.dim_videos_history": "success",
    }
    assert node_statuses(plain_dbt)["model.lakehouse.dim_users"] == "success"

    rows = show(
        plain_dbt,
        f"select user_id, {', '.join(columns)}, dbt_valid_to is null as is_current"
        " from dwd.dim_users_history",
    )
    history = sorted((r["user_id"], *(r[c] for c in columns), r["is_current"]) for r in rows)
    assert history == expected_user_history(plain_dbt.data, batches=2)
    versions = {key: [row[-1] for row in history if row[0] == key] for key in before.index}
    assert sorted(versions[changed[0]]) == [False, True]  # old version closed, new one current
    assert versions[deleted[0]] == [False]  # the deleted user's current row, invalidated


def test_a_failing_full_refresh_leaves_the_table_its_rows_and_history(
    plain_dbt: PlainDbt, project_copy: Path
):
    """`dbt run --full-refresh` of dim_users__state whose query fails while Spark runs it
    (after the plan is made): the old table stays readable, with its rows and its history."""
    model = project_copy / "models/dwd/dimensions/dim_users__state.sql"
    failing = "select cast(raise_error('the refresh query fails') as bigint) as user_id from (\n"
    call = "{{ dimension_state("
    edit(model, lambda sql: sql.replace(call, failing + call, 1) + ")\n")
    assert failing in model.read_text()
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())

    failed = plain_dbt("run", "-s", "dim_users__state", "--full-refresh", project=project_copy)
    assert failed.returncode == 1, failed.stdout[-3000:]
    (result,) = nodes(plain_dbt)
    assert (result["unique_id"], result["status"]) == ("model.lakehouse.dim_users__state", "error")
    assert "the refresh query fails" in result["message"]

    (table,) = show(
        plain_dbt,
        "select (select count(*) from dwd.dim_users) as users,"
        " (select count(*) from dwd.dim_users__state.history) as commits,"
        f" (select count(*) from dwd.dim_users__state.history where made_current_at >= '{started}')"
        " as commits_since_the_refresh,"
        " (select count(*) from dwd.dim_users_history) as versions",
    )
    assert table["users"] == len(users_truth(plain_dbt.data, 2))
    assert table["commits"] >= 2  # batch 1's create and batch 2's merge, still there
    assert table["commits_since_the_refresh"] == 0
    assert table["versions"] > table["users"]  # the SCD-2 history is untouched too


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
