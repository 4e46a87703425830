"""The venv's `dbt` in a subprocess, as CI/CD and another team run it, and the rows readers of
a table's main see, read from its metadata files with pyiceberg (no metastore: the dbt
process's Derby held it). Used by test_plain_dbt.py and test_integration_project.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.spark_config import PROJECT_DIR, environment_without_project_settings

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
        env = environment_without_project_settings()
        env.update(
            LAKEHOUSE_DATA_DIR=str(self.data),
            LAKEHOUSE_DRIVER_MEMORY="1g",  # beside pytest's own JVM
            LAKEHOUSE_JIT="quick",  # one command on small data: C2's compiling is wasted
            LAKEHOUSE_GC="parallel",  # less CPU than G1 on small builds
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


def newest_metadata(table: Path) -> Path:
    """The current metadata file of the Iceberg table in folder `table`: the newest written
    (a table dropped and created again starts its file numbers anew beside the old ones)."""
    files = list((table / "metadata").glob("*.metadata.json"))
    assert files, f"{table} is not an Iceberg table"
    return max(files, key=lambda path: json.loads(path.read_text())["last-updated-ms"])


def _static_table(table: Path):
    from pyiceberg.table import StaticTable

    return StaticTable.from_metadata(str(newest_metadata(table)))


def main_table(table: Path, ref: str = "main"):
    """What readers of main (or of branch or tag `ref`) see in the Iceberg table in folder
    `table`, as a pyarrow table."""
    iceberg = _static_table(table)
    if ref == "main":  # the current snapshot (a table never written has none, and no main)
        return iceberg.scan().to_arrow()
    return iceberg.scan(snapshot_id=iceberg.metadata.refs[ref].snapshot_id).to_arrow()


def table_refs(table: Path) -> dict[str, int]:
    """The branches and tags of the Iceberg table in folder `table`: name -> snapshot id."""
    return {ref: value.snapshot_id for ref, value in _static_table(table).metadata.refs.items()}
