"""The warm engine of the modeller's loop (scripts/dev_server.py): `lakehouse dev` in a process
of its own, as a developer types it, runs its dbt command in the dev server's kept session.

The server here is this test run's own session, served from a thread: what `lakehouse
dev-server` does after its session started (its start is the session's, tested everywhere).
The clients are real processes; they import neither dbt nor Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import PROJECT_TARGET

from scripts.dev_server import STATE_FILE, DevServer, ServerAddress, dbt_in_session
from scripts.spark_config import PROJECT_DIR

PROBE = "spark.lakehouse.dev_probe"  # a setting of this session only


def lakehouse_dev(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scripts.tasks", "dev", "--target", "ci", *args],
        cwd=PROJECT_DIR, env=os.environ.copy(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def server(spark, dbt, data_dir: Path) -> Iterator[DevServer]:
    # `dbt`: the environment and working folder the in-process dbt runs of this session use
    serving = DevServer(data_dir / STATE_FILE, dbt_in_session(spark, "ci", tuple(PROJECT_TARGET)))
    thread = threading.Thread(target=serving.serve_forever, daemon=True)
    thread.start()
    yield serving
    serving.shutdown()
    serving.server_close()
    thread.join(timeout=30)


def test_a_command_runs_in_the_kept_session_and_exits_as_dbt_does(spark, server):
    assert oct((server.state).stat().st_mode & 0o777) == "0o600"  # the token is the owner's
    spark.conf.set(PROBE, "kept-session-7f3a")
    shown = lakehouse_dev("show", "--inline", f"select '${{{PROBE}}}' as probe")
    assert shown.returncode == 0, shown.stdout[-3000:] + shown.stderr
    assert "kept-session-7f3a" in shown.stdout  # Spark substituted this session's setting

    failed = lakehouse_dev("show", "--inline", "select * from dev_server_no_such_table")
    assert failed.returncode == 2, failed.stdout[-3000:]  # dbt's code for an error
    assert "dev_server_no_such_table" in failed.stdout


def test_a_command_never_leaves_the_next_one_on_a_branch(spark, server):
    """A run stopped before its on-run-end keeps its branch setting in a kept session; the
    server clears it after every command, as a cold process's end does."""
    spark.conf.set("spark.wap.branch", "wap_999999")
    done = lakehouse_dev("show", "--inline", "select 1 as one")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert spark.conf.get("spark.wap.branch", None) is None


def test_a_wrong_token_runs_nothing(server):
    real = server.state.read_text()
    try:
        ServerAddress(server.address.port, "0" * 32).write(server.state)
        refused = lakehouse_dev("run-operation", "noop_that_must_not_run")
    finally:
        server.state.write_text(real)
    assert refused.returncode == 2
    assert "wrong token" in refused.stderr and "Running with dbt" not in refused.stdout


def test_without_a_server_the_client_says_how_to_start_one(server):
    saved = server.state.read_text()
    server.state.unlink()
    try:
        missing = lakehouse_dev("run", "-s", "dws_video__daily")
    finally:
        server.state.write_text(saved)
    assert missing.returncode == 2
    assert "lakehouse dev-server" in missing.stderr


def test_a_stopped_server_removes_its_address(spark, dbt, data_dir):
    state = data_dir / "dev-server-stop.json"
    serving = DevServer(state, dbt_in_session(spark, "ci"))
    assert json.loads(state.read_text())["port"] == serving.address.port
    serving.server_close()
    assert not state.exists()
