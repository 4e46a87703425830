"""B9 freshness: what one scheduled `dbt build` of a new batch costs, tests and publish
included, after a short and a long history, and against a hand-written PySpark job doing the
same work on the same files (scripts/bench/handwritten_job.py).

Per batch size N: the landing generator's batches of N events, one day each. Each side has
its own schemas (schema_prefix) and landing zone:
  - dbt xM: M history batches loaded by one dbt build (tests excluded, as a history loaded
    long ago), then one scheduled build with nothing new (it publishes: a scheduled run's
    tests read the loads since the last published run), then batch M+1 landed;
  - job x1: the same history loaded by the job, then batch 2 landed.
Every repeat rolls each side's tables back to their snapshots before the new batch and runs
it again (sides alternating), so every repeat meets the same files. The dbt side is a plain
scheduled `dbt build` (write-audit-publish on, tests and publish included, the profile's
threads); per phase it records the statements dbt sent and Spark's time for them (dbt's
SQLQuery events): the run lock and landing registration (on-run-start), the models with their
pre- and post-hooks, the snapshots, the tests, the publish and the deferred maintenance
(on-run-end).
"""

from __future__ import annotations

import re
import shutil
import threading
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
    goal,
    median,
    write_result,
)
from scripts.bench.dbt_workload import SEED
from scripts.bench.handwritten_job import HandwrittenJob
from scripts.bench.warehouse_side import WarehouseSide, load_average
from scripts.generate_landing import LandingGenerator, Scale

FRESHNESS_SECONDS = 60  # the goal for 50,000 events at x100, tests included
HISTORY_GOAL = 1.3  # x100 / x1
JOB_GOALS = {50_000: 3.0, 1_000_000: 2.0}  # dbt / hand-written job, per batch size


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
    "full": [
        Case(5_000, (1, 100), 20_000, 2_000),
        Case(50_000, (1, 100), 100_000, 10_000),
        Case(1_000_000, (1,), 100_000, 10_000),
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
    seconds: float
    statements: dict[str, int] = field(default_factory=dict)  # per phase
    spark_seconds: dict[str, float] = field(default_factory=dict)  # per phase
    model_seconds: dict[str, float] = field(default_factory=dict)  # dbt's execution_time


class DbtSide(WarehouseSide):
    def load_history(self) -> None:
        self.dbt(["build", "--exclude", "resource_type:test", "resource_type:unit_test"])
        self.dbt(["build"])  # nothing new: a published run, as before any scheduled run

    def measured(self) -> Sample:
        statements: dict[str, int] = defaultdict(int)
        spark_seconds: dict[str, float] = defaultdict(float)
        pending: dict[int, tuple[str, str]] = {}
        lock = threading.Lock()

        def listen(event: Any) -> None:
            name = event.info.name
            if name == "SQLQuery":
                info = event.data.node_info
                node = info.unique_id if info and info.unique_id else ""
                pending[threading.get_ident()] = (node, event.data.sql)
            elif name == "SQLQueryStatus":
                sent = pending.pop(threading.get_ident(), None)
                if sent:
                    phase = phase_of(*sent)
                    with lock:
                        statements[phase] += 1
                        spark_seconds[phase] += float(event.data.elapsed)

        started = time.perf_counter()
        result = self.dbt(["build"], [listen])
        seconds = time.perf_counter() - started
        models = {
            r.node.name: float(r.execution_time)
            for r in result.result.results
            if r.node.resource_type == "model"
        }
        return Sample(seconds, dict(statements), dict(spark_seconds), models)


class JobSide(WarehouseSide):
    def __init__(self, ctx: BenchContext, root: Path, label: str, prefix: str) -> None:
        super().__init__(ctx, root, label, prefix, history=1, schemas=("job",))
        self.job = HandwrittenJob(ctx.spark, self.live, prefix)

    def load_history(self) -> None:
        self.job.run(list(range(1, self.history + 1)))

    def measured(self) -> Sample:
        started = time.perf_counter()
        self.job.run([self.history + 1])
        return Sample(time.perf_counter() - started)


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
    sides: list[DbtSide | JobSide] = [
        DbtSide(ctx, root, f"dbt {case.events} x{m}", f"b9_{case.events}_x{m}_", history=m)
        for m in case.multipliers
    ]
    sides.append(JobSide(ctx, root, f"job {case.events} x1", f"b9_{case.events}_job_"))
    for side in sides:
        side.drop()
        side.land(store, range(1, side.history + 1), landed_ago_s=86_400)
        ctx.log(f"b9 {side.label}: loading {side.history} history batch(es)")
        side.load_history()
        side.record()
        side.land(store, range(side.history + 1, side.history + 2))

    samples: dict[str, list[Sample]] = {side.label: [] for side in sides}
    for repeat in range(ctx.repeats):
        for side in alternating(sides, repeat):
            side.restore()
            samples[side.label].append(side.measured())
        ctx.log(
            f"b9 {case.events:,} repeat {repeat + 1}: "
            + ", ".join(f"{label} {s[-1].seconds:.0f}s" for label, s in samples.items())
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
    for case in SIZES[ctx.size]:
        samples.update(run_case(ctx, case, root))
        loads.append(load_average())
    shutil.rmtree(root, ignore_errors=True)
    return _result(ctx, samples, loads, time.perf_counter() - began)


def _seconds(samples: dict[str, list[Sample]], label: str) -> float:
    return median([s.seconds for s in samples[label]])


def _result(
    ctx: BenchContext, samples: dict[str, list[Sample]], loads: list[list[float]], seconds: float
) -> BenchResult:
    cases = SIZES[ctx.size]
    table: list[dict[str, Any]] = []
    for label, runs in samples.items():
        row: dict[str, Any] = {"side": label, "build s": _seconds(samples, label)}
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
    freshest = max(cases, key=lambda c: (max(c.multipliers), c.events))
    label = f"dbt {min(freshest.events, 50_000)} x{max(freshest.multipliers)}"
    if label in samples:
        measured = _seconds(samples, label)
        name = f"scheduled build s, {label.removeprefix('dbt ')} history, tests included"
        checks.append(
            Check(f"{name} / {FRESHNESS_SECONDS} s", measured / FRESHNESS_SECONDS, 1.0, _why_job())
        )
        goals.append(goal(name, f"<= {FRESHNESS_SECONDS}", measured, measured <= 60))
    goals.append(
        goal(
            "peak memory, dbt / job",
            "<= 1.5",
            "not measured: both sides run in bench's one process",
            False,
        )
    )
    notes = [
        "dbt sides: a plain scheduled `dbt build` (write-audit-publish on, tests, snapshots, "
        "publish and deferred maintenance included, the profile's threads); per phase the "
        "statements dbt sent and Spark's summed time for them (phases overlap: threads)",
        "job side: scripts/bench/handwritten_job.py (ODS append with redelivery detection, "
        "DWD typed, validated by the project's rules and deduplicated, every reject "
        "quarantined with its reason, dimension merges, DWS day overwrite; one commit per "
        "table)",
        "load average (1, 5, 15 min) before each case and at the end: "
        + "; ".join(" ".join(f"{v:.2f}" for v in load) for load in loads),
    ]
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


def _why_history() -> str:
    return (
        "tests that still read every row (the dimensions', the changelogs' deletes) and the "
        "landing listing; see docs/cost.md"
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
