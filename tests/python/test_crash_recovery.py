"""SIGKILL a real `dbt build` in the middle of a model's write, and a nightly maintenance
run in the middle of a compaction; rerun both; the final tables must equal an
uninterrupted build of the same landing data (no duplicate, no missing batch), and the
files the crashes left behind must go to orphan cleanup only after its safety window.

The crashing runs are separate processes (their own JVM and metastore, as a scheduler
would start them). The uninterrupted reference is built in this test run's session under
a schema prefix; the crashed tables are then registered here from their metadata files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from scripts.generate_landing import LandingGenerator, Scale
from scripts.spark_config import PROJECT_DIR, environment_without_project_settings

SCALE = Scale(users=300, videos=80, events_per_batch=2_000, batches=2, min_changes_per_batch=10)
SEED = 23
REFERENCE_PREFIX = "crashref_"
REGISTERED = "crashrun"
TABLES = {
    "ods": ["ods_client__events", "ods_appdb__user_changes", "ods_appdb__video_changes"],
    "dwd": [
        "dwd_client__events",
        "dwd_quarantine__rejected_records",
        "dim_users__state",
        "dim_videos__state",
    ],
    "dws": ["dws_video__daily", "dws_user__daily"],
}
# when and by which run a row was loaded: the only columns that may differ between two
# correct builds (the crashed history runs more loads than the reference)
LOAD_TIME_COLUMNS = {
    "_loaded_at",
    "_max_loaded_at",
    "_listed_at",
    "_load_id",
    "_max_load_id",
    "_checked_load_id",
}


class Run:
    """`lakehouse dbt` commands one after another in one process of its own (one JVM, as a
    scheduler's job running a build and then the nightly maintenance), in its own process group."""

    def __init__(self, data_dir: Path, *commands: list[str]) -> None:
        env = environment_without_project_settings()
        env.update(LAKEHOUSE_DATA_DIR=str(data_dir), LAKEHOUSE_DRIVER_MEMORY="1g")
        script = (
            "import sys\nfrom scripts.tasks import run_dbt\n"
            f"sys.exit(any(run_dbt('ci', args) for args in {list(commands)!r}))"
        )  # the commands stop at the first that fails
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=PROJECT_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def saw(self, text: str, times: int = 1) -> bool:
        return sum(text in line for line in list(self.lines)) >= times

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)  # the Python driver and its JVM
        self.process.wait(timeout=60)

    def finish(self, timeout: float = 900) -> None:
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        assert code == 0, "\n".join(self.lines[-60:])


def parquet_files(folder: Path) -> set[Path]:
    return set(folder.rglob("*.parquet")) if folder.exists() else set()


def table_dir(data_dir: Path, schema: str, table: str) -> Path:
    return data_dir / "warehouse" / f"{schema}.db" / table


def kill_when_files_appear(
    run: Run, tables: list[Path], after: str, times: int = 1
) -> tuple[set[Path], dict[Path, int]]:
    """SIGKILL `run` as soon as a new data file shows up in one of `tables` once `after` was
    logged `times` times: the write has started and cannot have committed yet. Returns the new
    files and each table's committed versions when `after` was logged."""
    deadline = time.monotonic() + 600
    before = None  # the files there when `after` was logged
    while time.monotonic() < deadline and run.process.poll() is None:
        if before is None and run.saw(after, times):
            before = set().union(*(parquet_files(t / "data") for t in tables))
            versions = {t: committed_versions(t) for t in tables}
        if before is not None:
            new = set().union(*(parquet_files(t / "data") for t in tables)) - before
            if new:
                run.kill()
                return new, versions
        time.sleep(0.005)
    raise AssertionError("the run ended before it wrote:\n" + "\n".join(run.lines[-40:]))


def owning_table(path: Path) -> tuple[str, str]:
    """(schema, table) of a file under warehouse/<schema>.db/<table>/..."""
    index = next(i for i, part in enumerate(path.parts) if part.endswith(".db"))
    return path.parts[index].removesuffix(".db"), path.parts[index + 1]


def current_metadata(location: Path) -> Path:
    """The newest committed metadata file: highest version, and the last written of equals
    (a crash between writing metadata and the catalog swap leaves a stale twin)."""
    files = list((location / "metadata").glob("*.metadata.json"))
    return max(files, key=lambda f: (int(f.name.split("-")[0]), f.stat().st_mtime))


def committed_versions(location: Path) -> int:
    return len(list((location / "metadata").glob("*.metadata.json")))  # 0 before the table


@pytest.fixture(scope="module")
def crashed(spark, dbt, tmp_path_factory) -> dict:
    data_dir = tmp_path_factory.mktemp("crash")
    LandingGenerator(data_dir, SEED, SCALE).run(log=lambda _: None)
    # the last batch is delivered after the crashed build: two loads give ODS two files
    held_back = data_dir / "held_back"
    later = list((data_dir / "landing").glob(f"*/batch={SCALE.batches:06d}"))
    assert len(later) == len(TABLES["ods"]), later
    for folder in later:
        (held_back / folder.parent.name).mkdir(parents=True)
        folder.rename(held_back / folder.parent.name / folder.name)
    facts = {}

    # 1. a build killed while it writes the event detail (ODS has committed before it: the
    # build writes main directly; with write-audit-publish ODS would wait on the branch)
    events = table_dir(data_dir, "dwd", "dwd_client__events")
    crash = Run(data_dir, ["build", "--vars", json.dumps({"write_audit_publish": False})])
    facts["build_crash_files"], _ = kill_when_files_appear(
        crash, [events], after="START sql incremental model dwd.dwd_client__events"
    )
    facts["build_crash_committed"] = committed_versions(events)

    # 2. the rerun finishes the crashed load's layers and loads the batch delivered meanwhile;
    # then, in the same process, the nightly compaction is killed while it writes the
    # compacted ODS file (it starts only once the build succeeded)
    for folder in held_back.glob("*/batch=*"):
        folder.rename(data_dir / "landing" / folder.parent.name / folder.name)
    ods = [table_dir(data_dir, "ods", t) for t in TABLES["ods"]]
    nightly = ["run-operation", "iceberg_maintain_all", "--vars", "{compaction_min_small_files: 2}"]
    crash = Run(data_dir, ["build"], nightly)
    facts["compaction_crash_files"], versions = kill_when_files_appear(
        crash, ods, after="Running with dbt", times=2
    )
    facts["compaction_crash_committed"] = {
        path.name for path in ods if committed_versions(path) != versions[path]
    }
    rerun = Run(data_dir, nightly)
    rerun.finish()
    facts["nightly_log"] = [line for line in rerun.lines if "maintenance " in line]

    # the uninterrupted reference: same landing data, one scheduled run in this session.
    # `run`, not `build`: the comparisons read its tables only, so its data tests and
    # snapshots would prove nothing here (the crashed runs' builds ran theirs)
    prefix = json.dumps({"schema_prefix": REFERENCE_PREFIX})
    dbt(["run", "--vars", prefix], landing=data_dir / "landing")

    # the crashed process's tables, read here through their own metadata
    spark.sql(f"create schema if not exists {REGISTERED}")
    for schema, tables in TABLES.items():
        for table in tables:
            name = f"{REGISTERED}.{schema}__{table}"
            spark.sql(f"drop table if exists {name}")
            metadata = current_metadata(table_dir(data_dir, schema, table))
            spark.sql(
                f"call spark_catalog.system.register_table("
                f"table => '{name}', metadata_file => 'file:{metadata}')"
            )
    facts["data_dir"] = data_dir
    return facts


def test_the_kills_hit_uncommitted_writes(crashed):
    assert crashed["build_crash_files"], "the build was not killed mid-write"
    assert not crashed["build_crash_committed"], "the event detail committed before the kill"
    assert crashed["compaction_crash_files"], "the nightly run was not killed mid-compaction"
    assert not crashed["compaction_crash_committed"], "a compaction committed before the kill"
    # the rerun compacted what the crash left undone
    compacted = [line for line in crashed["nightly_log"] if "rewrote" in line]
    assert any("ods_client__events" in line for line in compacted), crashed["nightly_log"]


@pytest.mark.parametrize(("schema", "table"), [(s, t) for s, ts in TABLES.items() for t in ts])
def test_rerun_after_crashes_equals_an_uninterrupted_build(spark, crashed, schema, table):
    reference = f"{REFERENCE_PREFIX}{schema}.{table}"
    columns = [c for c in spark.table(reference).columns if c not in LOAD_TIME_COLUMNS]
    select = ", ".join(columns)
    crashed_table = f"{REGISTERED}.{schema}__{table}"
    rows = spark.sql(f"select count(*) from {reference}").first()[0]
    assert rows > 0
    assert spark.sql(f"select count(*) from {crashed_table}").first()[0] == rows
    for left, right in ((reference, crashed_table), (crashed_table, reference)):
        missing = spark.sql(f"select {select} from {left} except all select {select} from {right}")
        assert missing.count() == 0, f"{left} has rows {right} lacks: {missing.limit(5).collect()}"


def test_crash_leftovers_are_orphans_removed_only_after_the_safety_window(spark, dbt, crashed):
    leftovers = crashed["build_crash_files"] | crashed["compaction_crash_files"]
    leftovers = {p for p in leftovers if p.exists()}
    assert leftovers, "the crashes left no file behind"
    live_before = {}
    for schema, table in sorted({owning_table(p) for p in leftovers}):
        name = f"{REGISTERED}.{schema}__{table}"
        referenced = {
            r[0].removeprefix("file:")
            for r in spark.sql(f"select file_path from {name}.all_files").collect()
        }
        assert not {str(p) for p in leftovers} & referenced, "a leftover is referenced"
        live_before[name] = sorted(referenced)

    def remove_orphans(name: str) -> None:
        policy = {"remove_orphan_files": {"older_than_hours": 24}}
        args = json.dumps({"table": name, "policy": policy})
        dbt(["run-operation", "iceberg_maintain_table", "--args", args])

    for name in live_before:
        remove_orphans(name)
    assert all(p.exists() for p in leftovers), "fresh files removed inside the safety window"

    two_days_ago = time.time() - 48 * 3600
    for path in leftovers:
        os.utime(path, (two_days_ago, two_days_ago))
    for name in live_before:
        remove_orphans(name)
    assert not any(p.exists() for p in leftovers), "old crash leftovers survived orphan cleanup"
    for name, live in live_before.items():  # live files untouched, table still reads
        assert all(Path(path).exists() for path in live if "/data/" in path)
        assert spark.sql(f"select count(*) from {name}").first()[0] > 0
