"""The project as a Dagster code location (docs/running-on-a-schedule.md): every model,
snapshot and source an asset from dbt's manifest, every dbt test an asset check, and the
scheduled build as one job, `dbt build --selector every_batch`, so the run lock and
write-audit-publish apply exactly as in a plain scheduled build. The job runs on a schedule
and on a sensor that fires when a landed batch completes (its `_SUCCESS` marker); neither
starts a run while one is in progress. A run's write-audit-publish outcome (published, red,
conflict; the run's load id and tables) and the maintenance lines are run tags and asset
metadata; a red run fails with the branch to inspect.

    dagster dev                       # from the project folder: [tool.dagster] in pyproject.toml
    dagster definitions validate

The dbt target is LAKEHOUSE_DBT_TARGET (default `local`); dbt runs as plain dbt, a process of
its own per run.
"""

import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dagster import (
    AssetExecutionContext,
    DagsterRunStatus,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    Failure,
    Output,
    RunRequest,
    RunsFilter,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SkipReason,
    define_asset_job,
    schedule,
    sensor,
)
from dagster_dbt import DbtCliResource, DbtProject, dbt_assets

from scripts.landing import LandingZone
from scripts.spark_config import PROJECT_DIR, DataPaths

TARGET = os.environ.get("LAKEHOUSE_DBT_TARGET", "local")
SELECTOR = "every_batch"  # selectors.yml: the scheduled build
CRON = os.environ.get("LAKEHOUSE_SCHEDULE_CRON", "*/15 * * * *")

project = DbtProject(
    project_dir=PROJECT_DIR,
    profiles_dir=PROJECT_DIR / "profiles",
    target=TARGET,
    target_path=Path("target") / "dagster",  # its own manifest: never a run's target/
)
DBT = str(Path(sys.executable).with_name("dbt"))  # the venv's, whatever PATH holds
# `dbt parse` at every load (no connection, a few seconds, partial): a manifest kept from an
# earlier checkout lacks the models added since, and dagster-dbt fails on their events. Two
# processes loading at once (a code server and `dagster definitions validate`, two pytest
# workers) take turns: one must not read the manifest the other is writing.
(PROJECT_DIR / project.target_path).mkdir(parents=True, exist_ok=True)
with open(PROJECT_DIR / project.target_path / "parse.lock", "w") as turn:
    fcntl.flock(turn, fcntl.LOCK_EX)  # released when the file closes
    DbtCliResource(project_dir=project, dbt_executable=DBT).cli(
        ["parse", "--quiet"], target_path=project.target_path
    ).wait()
    MANIFEST = json.loads(project.manifest_path.read_text())


def run_target_path(context: AssetExecutionContext) -> Path:
    """A run's own dbt target/, seeded with this load's partial parse. dagster-dbt seeds a run
    only from target/partial_parse.msgpack, which other dbt commands write with other targets
    and vars: dbt rejected it and parsed the whole project again in every run."""
    parsed = PROJECT_DIR / project.target_path
    path = parsed / f"run-{context.run_id}"
    path.mkdir(parents=True, exist_ok=True)
    with open(parsed / "parse.lock", "w") as turn:
        fcntl.flock(turn, fcntl.LOCK_EX)  # never a file another load is writing
        if (parsed / "partial_parse.msgpack").exists():
            shutil.copy(parsed / "partial_parse.msgpack", path / "partial_parse.msgpack")
    return path


# dagster-dbt resolves the selector's `path:` methods from the working directory: from any
# other folder the selector matches nothing (no asset, no error)
with contextlib.chdir(PROJECT_DIR):
    # select="": dagster-dbt would add `--select fqn:*`, and an explicit selection turns
    # write-audit-publish off (a developer's partial build writes main)
    @dbt_assets(manifest=MANIFEST, select="", selector=SELECTOR, project=project)
    def lakehouse_dbt(context: AssetExecutionContext, dbt: DbtCliResource) -> Iterator[Any]:
        """One scheduled build. Its materializations are reported once the run has published
        (write-audit-publish: until then main shows none of it), each with the outcome and its
        table's maintenance line; a red or conflicting run fails naming the branch."""
        invocation = dbt.cli(
            ["build"], context=context, raise_on_error=False, target_path=run_target_path(context)
        )
        events, messages = [], []
        for raw in invocation.stream_raw_events():
            messages.append(str(raw.raw_event.get("info", {}).get("msg", "")))
            events.extend(
                raw.to_default_asset_events(manifest=invocation.manifest, context=context)
            )
        outcome = publish_outcome(messages)
        context.instance.add_run_tags(context.run_id, outcome.tags())
        if outcome.status != "published" or not invocation.is_successful():
            raise Failure(
                description=outcome.text
                or f"dbt build failed (exit {invocation.process.returncode})",
                metadata={"write-audit-publish": outcome.status, **outcome.metadata()},
            )
        maintenance = maintenance_lines(messages)
        for event in events:
            if isinstance(event, Output):
                name = _node_name(event, invocation)
                extra = {"write-audit-publish": f"published in run {outcome.load_id}"}
                if name in maintenance:
                    extra["maintenance"] = maintenance[name]
                event = event.with_metadata({**event.metadata, **extra})
            yield event


if not lakehouse_dbt.keys:
    raise RuntimeError(f"selector {SELECTOR} matched no dbt node in {project.manifest_path}")


def _node_name(event: Output, invocation: Any) -> str:
    """The dbt node behind an output (its unique id is in dagster-dbt's metadata)."""
    unique_id = event.metadata.get("unique_id")
    value = getattr(unique_id, "value", unique_id)
    node = invocation.manifest["nodes"].get(value, {}) if value else {}
    return node.get("alias") or node.get("name") or ""


class PublishOutcome:
    """What the run's on-run-end said about its publish (the adapter's write_audit_publish/)."""

    PUBLISHED = re.compile(r"write-audit-publish: run (\d+) published (\d+) tables")
    KEPT = re.compile(r"write-audit-publish: run (\d+) (not published|publish stopped): (.*)")
    BRANCH = re.compile(r"Branch (\S+) is kept")
    INSPECT = re.compile(r"Inspect: (.*)")

    def __init__(self, status: str, load_id: str = "", text: str = "", **found: str) -> None:
        self.status, self.load_id, self.text, self.found = status, load_id, text, found

    def tags(self) -> dict[str, str]:
        return {f"lakehouse/{k}": v for k, v in self.metadata().items() if v} | {
            "lakehouse/write-audit-publish": self.status
        }

    def metadata(self) -> dict[str, str]:
        return {"load_id": self.load_id, **self.found}


def publish_outcome(messages: list[str]) -> PublishOutcome:
    for message in messages:
        if published := PublishOutcome.PUBLISHED.search(message):
            return PublishOutcome("published", published[1], message, tables=published[2])
        if kept := PublishOutcome.KEPT.search(message):
            status = "red" if kept[2] == "not published" else "conflict"
            branch = PublishOutcome.BRANCH.search(message)
            inspect = PublishOutcome.INSPECT.search(message)
            return PublishOutcome(
                status, kept[1], message, reason=kept[3],
                branch=branch[1] if branch else "", inspect=inspect[1] if inspect else "",
            )  # fmt: skip
    return PublishOutcome("not run")  # no publish hook ran: the build stopped before its end


def maintenance_lines(messages: list[str]) -> dict[str, str]:
    """{table name: its maintenance line} from the post-hooks' and the publish's logs."""
    found = {}
    for message in messages:
        if line := re.match(r"maintenance (\S+): (.*)", message):
            found[line[1].split(".")[-1]] = line[2]
    return found


every_batch_job = define_asset_job("every_batch", selection=[lakehouse_dbt])


def _in_progress(context: ScheduleEvaluationContext | SensorEvaluationContext) -> bool:
    runs = context.instance.get_runs(
        RunsFilter(
            job_name=every_batch_job.name,
            statuses=[
                DagsterRunStatus.QUEUED,
                DagsterRunStatus.NOT_STARTED,
                DagsterRunStatus.STARTING,
                DagsterRunStatus.STARTED,
            ],
        ),
        limit=1,
    )
    return bool(runs)


@schedule(job=every_batch_job, cron_schedule=CRON, default_status=DefaultScheduleStatus.STOPPED)
def every_batch_schedule(context: ScheduleEvaluationContext) -> RunRequest | SkipReason:
    if _in_progress(context):
        return SkipReason("a scheduled build is still running (one at a time: the run lock)")
    return RunRequest()


def landed_sources() -> list[str]:
    """The landing folders the project's sources declare (meta.landing_folder)."""
    return sorted(
        {
            source["meta"]["landing_folder"]
            for source in MANIFEST["sources"].values()
            if source.get("meta", {}).get("landing_folder")
        }
    )


@sensor(
    job=every_batch_job, minimum_interval_seconds=60, default_status=DefaultSensorStatus.STOPPED
)
def landed_batch_sensor(context: SensorEvaluationContext) -> RunRequest | SkipReason:
    """A run when a batch folder of any landing source has completed since the last run the
    sensor started; while a run is in progress the batch waits (the cursor stays)."""
    zone = LandingZone(DataPaths.for_target(TARGET).landing)
    complete = sorted(f"{s}/{b}" for s in landed_sources() for b in zone.complete_batches(s))
    new = sorted(set(complete) - set(json.loads(context.cursor or "[]")))
    if not new:
        return SkipReason("no landed batch has completed since the last run")
    if _in_progress(context):
        return SkipReason(f"{len(new)} completed batch(es) wait: a scheduled build is running")
    context.update_cursor(json.dumps(complete))
    return RunRequest(run_key=",".join(new), tags={"lakehouse/batches": ",".join(new)[:4000]})


defs = Definitions(
    assets=[lakehouse_dbt],
    jobs=[every_batch_job],
    schedules=[every_batch_schedule],
    sensors=[landed_batch_sensor],
    resources={"dbt": DbtCliResource(project_dir=project, target=TARGET, dbt_executable=DBT)},
)
