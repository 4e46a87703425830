"""The Dagster code location (orchestration/definitions.py) without running dbt: what it loads
from the manifest, and its sensor on landed batches. The job itself runs dbt in
test_plain_dbt.py (beside the plain build it must equal)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    RunRequest,
    SkipReason,
    build_sensor_context,
)

from orchestration.definitions import every_batch_job, lakehouse_dbt, landed_batch_sensor, project
from scripts.landing import LandingZone
from scripts.spark_config import PROJECT_DIR


def test_every_node_of_the_scheduled_build_is_an_asset_and_every_test_a_check():
    manifest = json.loads(project.manifest_path.read_text())
    persisted = {
        node["name"]
        for node in manifest["nodes"].values()
        if node["resource_type"] in ("model", "snapshot")
        and node["config"]["materialized"] != "ephemeral"
    }
    assets = {key.path[-1] for key in lakehouse_dbt.keys}
    assert assets == persisted and len(assets) >= 15
    tests_on_models = [
        n
        for n in manifest["nodes"].values()
        if n["resource_type"] == "test" and n.get("attached_node")
    ]
    assert len(lakehouse_dbt.check_specs_by_output_name) >= len(tests_on_models) - 5 > 50


def test_the_code_location_validates_from_the_project_folder():
    validated = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "definitions", "validate"],
        cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert validated.returncode == 0, validated.stdout[-2000:] + validated.stderr[-2000:]
    assert "passed validation" in validated.stderr + validated.stdout


def test_the_sensor_starts_a_run_for_a_completed_batch_and_never_two_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAKEHOUSE_LANDING_DIR", raising=False)
    zone = LandingZone(tmp_path / "landing")
    instance = DagsterInstance.ephemeral()

    def evaluate(cursor: str | None) -> tuple[RunRequest | SkipReason, str | None]:
        context = build_sensor_context(instance=instance, cursor=cursor)
        return landed_batch_sensor(context), context.cursor

    first = zone.batch_folder("client_events", 1)
    zone.write_file(first, "part-00000.jsonl", '{"event_id": "e1"}\n')
    waiting, cursor = evaluate(None)
    assert isinstance(waiting, SkipReason) and cursor is None  # no marker yet: not complete

    zone.mark_complete(first)
    request, cursor = evaluate(cursor)
    assert isinstance(request, RunRequest) and request.run_key == "client_events/batch=000001"
    again, cursor = evaluate(cursor)
    assert isinstance(again, SkipReason)  # the same batch never starts a second run

    running = DagsterRun(job_name=every_batch_job.name, status=DagsterRunStatus.STARTED)
    instance.add_run(running)
    second = zone.batch_folder("appdb_users", 1)
    zone.write_file(second, "part-00000.jsonl", '{"op": "+I"}\n')
    zone.mark_complete(second)
    held, held_cursor = evaluate(cursor)
    assert isinstance(held, SkipReason) and "running" in held.skip_message
    assert held_cursor == cursor  # the batch waits for the run in progress

    instance.report_run_failed(running)
    request, _ = evaluate(cursor)
    assert isinstance(request, RunRequest) and request.run_key == "appdb_users/batch=000001"
