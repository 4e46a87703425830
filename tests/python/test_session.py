"""A fresh process from `get_spark()` may start with any statement: here, reading an Iceberg
metadata table before any plain table access (it used to fail to reach the metastore)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from scripts.spark_config import PROJECT_DIR

CREATE = """
from scripts.session import get_spark
spark = get_spark("ci")
spark.sql("create schema if not exists fresh")
spark.sql("create table fresh.events (id int) using iceberg")
spark.sql("insert into fresh.events values (1)")
"""

READ_METADATA_FIRST = """
from scripts.session import get_spark
spark = get_spark("ci")
print("snapshots:", spark.sql("select * from fresh.events.snapshots").count())
print("refs:", spark.sql("select name from fresh.events.refs").first().name)
"""


def run_fresh(code: str, data_dir: Path) -> subprocess.CompletedProcess:
    """A new Python process (so a new JVM and metastore client) on its own data folder."""
    location = ("LAKEHOUSE_WAREHOUSE_DIR", "LAKEHOUSE_METASTORE_DIR", "LAKEHOUSE_LANDING_DIR")
    env = {name: value for name, value in os.environ.items() if name not in location}
    env["LAKEHOUSE_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_fresh_session_can_read_a_metadata_table_first(tmp_path):
    created = run_fresh(CREATE, tmp_path)
    assert created.returncode == 0, created.stderr[-3000:]
    read = run_fresh(READ_METADATA_FIRST, tmp_path)
    assert read.returncode == 0, read.stderr[-3000:]
    assert "snapshots: 1" in read.stdout
    assert "refs: main" in read.stdout
