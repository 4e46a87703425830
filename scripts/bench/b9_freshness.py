"""B9 freshness: what one scheduled `dbt build` of a new batch costs, tests and publish
included, after a short and a long history, and against a hand-written PySpark job doing the
same work on the same files (scripts/bench/handwritten_job.py).

Per batch size N: the landing generator's batches of N events, one day each. Each side runs
as processes of its own, as a scheduler runs it (scripts/bench/process_tree.py: wall time
from launch to exit, JVM start included on both sides, and the peak memory of the process
tree), with its own data folder (warehouse, metastore) and landing zone:
  - dbt xM: M history batches loaded by dbt builds of at most 1,000,000 events (tests
    excluded, as a history loaded long ago), then one scheduled build with nothing new (it
    publishes: a scheduled run's tests read the loads since the last published run), then
    batch M+1 landed;
  - job x1: the same history loaded by the job, then batch 2 landed.
Every repeat after the first rolls each side's tables back to their snapshots before the new
batch and runs it again (sides alternating), so every repeat meets the same files. The dbt
side is a plain scheduled `dbt build` (write-audit-publish on, tests and publish included,
the profile's threads); per phase it records the statements dbt sent and Spark's time for
them (the SQLQuery events of dbt's JSON debug log): the run lock and landing registration
(on-run-start), the models with their pre- and post-hooks, the snapshots, the tests, the
publish and the deferred maintenance (on-run-end).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scripts.bench.common import (
    BenchContext,
    BenchResult,
    Check,
    alternating,
    bar_panels,
    environment,
    goal,
    median,
    write_result,
)
from scripts.bench.dbt_workload import SEED
from scripts.bench.process_tree import Measured, run_measured
from scripts.bench.warehouse_side import LAYERS, WarehouseSide, load_average
from scripts.generate_landing import LandingGenerator, Scale
from scripts.spark_config import PROJECT_DIR, dbt_env

FRESHNESS_SECONDS = 60  # the goal for 50,000 events at x100, tests included
HISTORY_GOAL = 1.3  # x100 / x1
JOB_GOALS = {50_000: 3.0, 1_000_000: 2.0}  # dbt / hand-written job, per batch size
HISTORY_EVENTS_PER_BUILD = 1_000_000
MEMORY_GOAL = 1.5  # peak memory of the process trees, dbt / hand-written job
GIB = 1024**3
# a side's children find their folders from its own values of these
PATH_VARIABLES = {
    "LAKEHOUSE_DATA_DIR", "LAKEHOUSE_WAREHOUSE_DIR", "LAKEHOUSE_METASTORE_DIR",
    "LAKEHOUSE_LANDING_DIR", "LAKEHOUSE_METASTORE_URI", "DBT_TARGET_PATH", "DBT_LOG_PATH",
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    events: int  # per batch
    multipliers: tuple[int, ...]  # history batches of the dbt sides
    users: int
    videos: int


SIZES = {
    "smoke": [Case(300, (1, 2), users=150, videos=40)],
    # the full size's batches at a tenth of its history (under an hour on 2 cores)
    "medium": [Case(5_000, (1, 10), 20_000, 2_000), Case(50_000, (1, 10), 100_000, 10_000)],
    "full": [  # the goals first: a run stopped midway has written those
        Case(50_000, (1, 100), 100_000, 10_000),
        Case(1_000_000, (1,), 100_000, 10_000),
        Case(5_000, (1, 100), 20_000, 2_000),
    ],
}

MAINTENANCE = re.compile(
    r"system\.(rewrite|expire|compute|remove)|'lakehouse\.TableState', 'summary'|maintenance_log"
    r"|with files as|describe table |lakehouse\.maintenance\.",
    re.IGNORECASE,
)


def phase_of(node: str, statement: str) -> str:
    if node.startswith("operation.") and "on-run-start" in node:
        return "on-run-start (lock, branch, landing)"
    if node.endswith("on-run-end-1"):  # wap_publish (dbt_project.yml)
        return "maintenance (deferred)" if MAINTENANCE.search(statement) else "publish"
    if node.startswith("operation."):
        return "on-run-end (caches, lock release)"
    if node.startswith("model."):
        return "models (with their hooks)"
    if node.startswith("snapshot."):
        return "snapshots"
    if node.startswith(("test.", "unit_test.")):
        return "tests"
    return "dbt's own (schemas, relation listing)"


@dataclass
class Sample:
    seconds: float  # launch to exit: interpreter, JVM and session start included
    peak_rss_bytes: int  # the process tree's
    statements: dict[str, int] = field(default_factory=dict)  # per phase
    spark_seconds: dict[str, float] = field(default_factory=dict)  # per phase
    model_seconds: dict[str, float] = field(default_factory=dict)  # dbt's execution_time
    dbt_elapsed: float = 0.0  # run_results.json: the invocation after dbt's start and parse


class ProcessSide(WarehouseSide):
    """A side in processes of its own, as a scheduler runs it: its own data folder
    (warehouse and Derby metastore, which one process at a time may open) and landing zone.
    Loading the history, recording the tables' snapshots and rolling back to them before each
    repeat are processes of their own too, outside the measurement."""

    def __init__(self, ctx: BenchContext, root: Path, label: str, prefix: str, history: int,
                 schemas: tuple[str, ...]) -> None:  # fmt: skip
        super().__init__(ctx, root, label, prefix, history, schemas)
        self.data, self.runs = self.root / "data", 0
        self.state = self.root / "snapshots.json"

    def env(self) -> dict[str, str]:
        paths = {"LAKEHOUSE_DATA_DIR": str(self.data), "LAKEHOUSE_LANDING_DIR": str(self.live)}
        own = {k: v for k, v in os.environ.items() if k not in PATH_VARIABLES}
        with environment(**paths):
            return {**own, **dbt_env(self.ctx.target), **paths}

    def process(self, argv: list[str], what: str) -> Measured:
        self.runs += 1
        log = self.root / f"{self.runs:03d}-{what}.log"
        return run_measured(argv, self.env(), PROJECT_DIR, log)

    def record(self) -> None:
        self.process(self.tables_command("record"), "record")

    def restore(self) -> None:
        self.process(self.tables_command("restore"), "restore")

    def tables_command(self, action: str) -> list[str]:
        return [
            sys.executable, "-m", "scripts.bench.warehouse_side", action,
            "--layers", *self.layers, "--state", str(self.state), "--target", self.ctx.target,
        ]  # fmt: skip

    def drop(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class DbtSide(ProcessSide):
    def __init__(self, ctx: BenchContext, root: Path, label: str, prefix: str,
                 history: int, events: int) -> None:  # fmt: skip
        super().__init__(ctx, root, label, prefix, history, LAYERS)
        self.events = events  # per batch

    def dbt_command(self, args: list[str], logs: Path, **variables: Any) -> list[str]:
        """Plain dbt, as a scheduler calls it; its debug log as JSON for the statements."""
        return [
            str(Path(sys.executable).parent / "dbt"), *args,
            "--target", self.ctx.target,
            "--project-dir", str(PROJECT_DIR),
            "--target-path", str(self.root / "target"),
            "--log-path", str(logs),
            "--log-format-file", "json", "--log-level-file", "debug",
            "--vars", json.dumps({"schema_prefix": self.prefix, **variables}),
        ]  # fmt: skip

    def load_history(self, store: Path) -> None:
        """At most HISTORY_EVENTS_PER_BUILD events per build, as a history of scheduled runs
        would have loaded them (one build of 5,000,000 events would hold them all in its
        cache of typed rows at once)."""
        tests = ["--exclude", "resource_type:test", "resource_type:unit_test"]
        per_build = max(1, HISTORY_EVENTS_PER_BUILD // self.events)
        for first in range(1, self.history + 1, per_build):
            self.land(store, range(first, min(first + per_build, self.history + 1)), 86_400)
            # the folders are dated a day back (the measured run must not list them again):
            # older than the previous load's listing, so a history build lists every folder
            everything = {"landing_full_listing": True}
            logs = self.root / "logs"
            self.process(self.dbt_command(["build", *tests], logs, **everything), "history")
        # nothing new: a published run, as before any scheduled run
        self.process(self.dbt_command(["build"], self.root / "logs"), "published")

    def measured(self) -> Sample:
        logs = self.root / f"logs-{self.runs + 1:03d}"
        run = self.process(self.dbt_command(["build"], logs), "build")
        statements, spark_seconds = statements_per_phase(logs / "dbt.log")
        results = json.loads((self.root / "target" / "run_results.json").read_text())
        models = {
            r["unique_id"].split(".")[-1]: float(r["execution_time"])
            for r in results["results"]
            if r["unique_id"].startswith("model.")
        }
        return Sample(
            run.seconds, run.peak_rss_bytes, statements, spark_seconds, models,
            float(results["elapsed_time"]),
        )  # fmt: skip


def statements_per_phase(log: Path) -> tuple[dict[str, int], dict[str, float]]:
    """The statements dbt sent, per phase, and Spark's summed time for them, from dbt's JSON
    debug log: a SQLQuery event names the node and its SQL, the SQLQueryStatus that follows
    on the same thread its elapsed time."""
    statements: dict[str, int] = defaultdict(int)
    spark_seconds: dict[str, float] = defaultdict(float)
    pending: dict[str, tuple[str, str]] = {}
    # dbt rotates its log at 10 MB (dbt.log.1 is the newest of the older ones)
    rotated = sorted(log.parent.glob(log.name + ".*"), key=lambda p: -int(p.suffix[1:]))
    lines = [line for part in [*rotated, log] for line in part.read_text().splitlines()]
    for line in lines:
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        name, thread = event["info"]["name"], event["info"].get("thread", "")
        if name == "SQLQuery":
            node = (event["data"].get("node_info") or {}).get("unique_id", "")
            pending[thread] = (node, event["data"]["sql"])
        elif name == "SQLQueryStatus" and thread in pending:
            phase = phase_of(*pending.pop(thread))
            statements[phase] += 1
            spark_seconds[phase] += float(event["data"].get("elapsed", 0.0))
    return dict(statements), dict(spark_seconds)


class JobSide(ProcessSide):
    def __init__(self, ctx: BenchContext, root: Path, label: str, prefix: str) -> None:
        super().__init__(ctx, root, label, prefix, history=1, schemas=("job",))

    def job_command(self, batches: list[int], loaded: int) -> list[str]:
        return [
            sys.executable, "-m", "scripts.bench.handwritten_job",
            "--landing", str(self.live), "--prefix", self.prefix,
            "--batches", *map(str, batches), "--loaded", str(loaded),
            "--target", self.ctx.target,
        ]  # fmt: skip

    def load_history(self, store: Path) -> None:
        self.land(store, range(1, self.history + 1), landed_ago_s=86_400)
        self.process(self.job_command(list(range(1, self.history + 1)), 0), "history")

    def measured(self) -> Sample:
        run = self.process(self.job_command([self.history + 1], 1), "job")
        return Sample(run.seconds, run.peak_rss_bytes)


def run_case(ctx: BenchContext, case: Case, root: Path) -> dict[str, list[Sample]]:
    store = root / f"store-{case.events}"
    batches = max(case.multipliers) + 1
    scale = Scale(
        users=case.users,
        videos=case.videos,
        events_per_batch=case.events,
        batches=batches,
        days_per_batch=1.0,
    )
    ctx.log(f"b9: generating {batches} batches of {case.events:,} events")
    LandingGenerator(store, SEED, scale).run(log=lambda _: None)
    sides: list[ProcessSide] = [
        DbtSide(ctx, root, f"dbt {case.events} x{m}", f"b9_{case.events}_x{m}_", m, case.events)
        for m in case.multipliers
    ]
    sides.append(JobSide(ctx, root, f"job {case.events} x1", f"b9_{case.events}_job_"))
    for side in sides:
        side.drop()
        ctx.log(f"b9 {side.label}: loading {side.history} history batch(es)")
        side.load_history(store)
        side.record()
        side.land(store, range(side.history + 1, side.history + 2))

    samples: dict[str, list[Sample]] = {side.label: [] for side in sides}
    for repeat in range(ctx.repeats):
        for side in alternating(sides, repeat):
            if repeat:  # the first repeat starts where the history left the tables
                side.restore()
            samples[side.label].append(side.measured())
        ctx.log(
            f"b9 {case.events:,} repeat {repeat + 1}: "
            + ", ".join(
                f"{label} {s[-1].seconds:.0f}s {s[-1].peak_rss_bytes / GIB:.1f} GiB"
                for label, s in samples.items()
            )
        )
    for side in sides:
        side.drop()
    shutil.rmtree(store, ignore_errors=True)
    return samples


def run(ctx: BenchContext) -> BenchResult:
    began = time.perf_counter()
    root = ctx.work_dir / f"b9-{ctx.size}"
    shutil.rmtree(root, ignore_errors=True)
    loads = [load_average()]
    samples: dict[str, list[Sample]] = {}
    done: list[Case] = []
    for case in SIZES[ctx.size]:
        samples.update(run_case(ctx, case, root))
        loads.append(load_average())
        done.append(case)
        # written after every case: a long run stopped midway keeps what it measured
        result = _result(ctx, done, samples, loads, time.perf_counter() - began)
    shutil.rmtree(root, ignore_errors=True)
    return result


def _seconds(samples: dict[str, list[Sample]], label: str) -> float:
    return median([s.seconds for s in samples[label]])


def _result(
    ctx: BenchContext,
    cases: list[Case],
    samples: dict[str, list[Sample]],
    loads: list[list[float]],
    seconds: float,
) -> BenchResult:
    table: list[dict[str, Any]] = []
    for label, runs in samples.items():
        row: dict[str, Any] = {
            "side": label,
            "build s": _seconds(samples, label),
            "peak GiB": median([s.peak_rss_bytes / GIB for s in runs]),
        }
        if label.startswith("dbt"):
            row["dbt elapsed s"] = median([s.dbt_elapsed for s in runs])
        for phase in sorted({p for s in runs for p in s.statements}):
            row[f"{phase}: statements"] = int(median([s.statements.get(phase, 0) for s in runs]))
            row[f"{phase}: Spark s"] = median([s.spark_seconds.get(phase, 0.0) for s in runs])
        table.append(row)

    checks: list[Check] = []
    goals: list[dict[str, Any]] = []
    for case in cases:
        small = f"dbt {case.events} x1"
        large_m = max(case.multipliers)
        dbt_s, job_s = _seconds(samples, small), _seconds(samples, f"job {case.events} x1")
        if large_m > 1:
            history = _seconds(samples, f"dbt {case.events} x{large_m}") / dbt_s
            name = f"x{large_m}/x1, {case.events:,} events, tests included"
            checks.append(Check(name, history, HISTORY_GOAL, why=_why_history()))
            goals.append(goal(name, f"<= {HISTORY_GOAL}", history, history <= HISTORY_GOAL))
        job_goal = JOB_GOALS.get(case.events, 3.0)
        name = f"dbt build / hand-written job, {case.events:,} events"
        checks.append(Check(name, dbt_s / job_s, job_goal, why=_why_job()))
        goals.append(goal(name, f"<= {job_goal}", dbt_s / job_s, dbt_s / job_s <= job_goal))
        memory = _peak(samples, small) / _peak(samples, f"job {case.events} x1")
        name = f"peak memory dbt / hand-written job, {case.events:,} events"
        checks.append(Check(name, memory, MEMORY_GOAL, why=_why_memory()))
        goals.append(goal(name, f"<= {MEMORY_GOAL}", memory, memory <= MEMORY_GOAL))
    freshest = max(cases, key=lambda c: (max(c.multipliers), c.events))
    label = f"dbt {min(freshest.events, 50_000)} x{max(freshest.multipliers)}"
    if label in samples:
        measured = _seconds(samples, label)
        name = f"scheduled build s, {label.removeprefix('dbt ')} history, tests included"
        fresh = measured / FRESHNESS_SECONDS
        checks.append(Check(f"{name} / {FRESHNESS_SECONDS} s", fresh, 1.0, _why_fresh()))
        goals.append(goal(name, f"<= {FRESHNESS_SECONDS}", measured, measured <= 60))
    notes = [
        "each side runs as its own process, as a scheduler runs it: `build s` from launch to "
        "exit (Python, JVM and session start included on both sides), `peak GiB` the resident "
        "memory of its process tree (Python and the JVM), sampled every 0.1 s; each side has "
        "its own data folder (warehouse, metastore) and landing zone",
        "dbt sides: a plain scheduled `dbt build` (write-audit-publish on, tests, snapshots, "
        "publish and deferred maintenance included, the profile's threads); per phase the "
        "statements dbt sent and Spark's summed time for them, from dbt's JSON debug log "
        "(phases overlap: threads); `dbt elapsed s` is run_results.json's, after dbt's start",
        "job side: scripts/bench/handwritten_job.py (ODS append with redelivery detection, "
        "DWD typed, validated by the project's rules and deduplicated, every reject "
        "quarantined with its reason, dimension merges, DWS day overwrite; one commit per "
        "table)",
        "load average (1, 5, 15 min) before each case and at the end: "
        + "; ".join(" ".join(f"{v:.2f}" for v in load) for load in loads),
    ]
    left = [f"{case.events:,} events" for case in SIZES[ctx.size] if case not in cases]
    if left:
        notes.append(f"not in this result (the run stopped before them): {', '.join(left)}")
    result = BenchResult(
        name="b9",
        title="freshness: one scheduled build after short and long histories vs a hand-written job",
        size=ctx.size,
        repeats=ctx.repeats,
        params={"cases": [asdict(case) for case in cases]},
        metrics={
            "samples": {label: [asdict(s) for s in runs] for label, runs in samples.items()},
            "load_average": loads,
        },
        table=table,
        checks=checks,
        notes=notes,
        seconds=seconds,
        goals=goals,
    )
    write_result(result, ctx, plot)
    return result


def _peak(samples: dict[str, list[Sample]], label: str) -> float:
    return median([float(s.peak_rss_bytes) for s in samples[label]])


def _why_memory() -> str:
    return (
        "dbt's own process (Python: the manifest, the adapter) beside the same JVM settings; "
        "the JVM's heap grows to what the build's caches and plans need; see docs/cost.md"
    )


def _why_history() -> str:
    return (
        "tests that still read every row (the dimensions', the changelogs' deletes) and the "
        "landing listing; see docs/cost.md"
    )


def _why_fresh() -> str:
    return (
        "a plain `dbt build` on the embedded target starts its own JVM and Spark session (in "
        "its first statement: the Spark s of dbt's own phase) and runs on a cold JIT; a warm "
        "Spark (the cluster target's Thrift server) pays neither; see docs/cost.md"
    )


def _why_job() -> str:
    return (
        "dbt's fixed statements per model (branch, properties, write order, maintenance "
        "decision, completeness stamp), the tests and the publish; see docs/cost.md"
    )


def plot(result: BenchResult, path: Path) -> None:
    bar_panels(
        path,
        f"B9 freshness ({result.size})",
        [("build s", {row["side"]: float(row["build s"]) for row in result.table})],
    )
