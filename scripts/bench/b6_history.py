"""B6 history independence: the same-sized new batch landed onto histories of x1, x10 and
x100, timed through the incremental `dbt build` of every layer, per model and whole.

History is real history: the landing generator's batches 1..m*H (H history batches at x1, one
day of events each), loaded by one `dbt build` per side, so every table has the models' own
columns, partitioning and layout, and the layout a compacted history has (the maintenance
post-hook binpacks every 5 small files): ODS in a few large files, one file per day partition
of the detail and the aggregates. (Splitting ODS into a file per batch instead would only make
the measured run compact them: a catch-up, not the steady state.) The history's batch
folders are dated a day back, as a history landed long ago is: a run lists only the folders
changed since its last load.
Then batch m*H+1 (same size on every side) is landed, the tables' snapshots recorded, and
each repeat rolls every table back to them before it runs the incremental build, so every
repeat meets the same files; sides alternate order.

The build excludes data and unit tests (they check whole tables by design; see docs/cost.md).
Files scanned are Iceberg's resultDataFiles metric of every query dbt sent for a node (its
watermark queries, the model, its maintenance post-hook), from a QueryExecutionListener.
max_event_lateness_days is 3 here, so the history at x1 (H days) is already longer than the
deduplication window: the detail reads the window's days, never the history.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scripts.bench.common import (
    BenchContext,
    BenchResult,
    Check,
    alternating,
    bar_panels,
    median,
    sql,
    write_result,
)
from scripts.bench.dbt_workload import SEED
from scripts.bench.scan_metrics import ScanCounter
from scripts.bench.warehouse_side import WarehouseSide, load_average
from scripts.generate_landing import LandingGenerator, Scale

LATENESS_DAYS = 3
GOAL = 1.3


@dataclass(frozen=True)
class B6Size:
    events_per_batch: int
    users: int
    videos: int
    history_batches: int  # H: the history at x1, one day per batch
    multipliers: tuple[int, ...]


SIZES = {
    "smoke": B6Size(events_per_batch=300, users=150, videos=40, history_batches=4,
                    multipliers=(1, 2)),
    "medium": B6Size(events_per_batch=500, users=2_000, videos=400, history_batches=4,
                     multipliers=(1, 10, 100)),
    # x100 = 400 history batches, 800k events: about 15 minutes on an idle 2-core machine
    "full": B6Size(events_per_batch=2_000, users=10_000, videos=1_000, history_batches=4,
                   multipliers=(1, 10, 100)),
}  # fmt: skip

# Why a model's cost may still follow the history (docs/cost.md)
KNOWN_GAPS = {
    "ods": "the run lists the names of every batch folder of the landing root (one directory "
    "listing; docs/cost.md, known gaps)",
    "dim_": "the merge filters the key column of the whole dimension to the batch's keys "
    "(docs/cost.md, known gaps)",
    "dwd_client__events": "deduplication reads the detail's days within "
    "max_event_lateness_days of the new arrivals; more files per day partition cost more",
}


def files_ratio(large: int, small: int) -> float:
    """Files scanned large / small; a side that scans nothing counts as one file."""
    return 1.0 if large == small else large / max(small, 1)


def why(node: str) -> str:
    for prefix, reason in KNOWN_GAPS.items():
        if node.startswith(prefix):
            return reason
    return "fixed per-statement cost dominates at this size, or machine noise; see docs/cost.md"


class Side(WarehouseSide):
    """One history size: its own schemas (schema_prefix) and landing zone."""

    def __init__(self, ctx: BenchContext, root: Path, multiplier: int, size: B6Size):
        label = f"x{multiplier}"
        super().__init__(ctx, root, label, f"b6_{label}_", multiplier * size.history_batches)
        self.multiplier = multiplier

    def dbt(self, args: list[str], callbacks: list[Any] | None = None) -> Any:
        variables = {"max_event_lateness_days": LATENESS_DAYS}
        return super().dbt(args, callbacks, variables, threads=1)


@dataclass
class BuildSample:
    seconds: float
    node_seconds: dict[str, float]
    node_files: dict[str, int]
    node_tables: dict[str, dict[str, int]]  # files scanned per node and table
    hook_files: int  # on-run-start/end hooks: the run lock, landing registration


def measured_build(side: Side) -> BuildSample:
    """The incremental build with each node's dbt timing and files scanned."""
    node_tables: dict[str, dict[str, int]] = {}
    with ScanCounter(side.ctx.spark) as scans:
        outside: Counter = Counter()

        def listen(event: Any) -> None:
            name = event.info.name
            if name == "NodeStart":
                outside.update(scans.take())
            elif name == "NodeFinished":
                node = event.data.node_info.node_name
                node_tables[node] = dict(scans.take())

        started = time.perf_counter()
        result = side.dbt(
            ["build", "--exclude", "resource_type:test", "resource_type:unit_test"], [listen]
        )
        seconds = time.perf_counter() - started
        outside.update(scans.take())
    models = [r for r in result.result.results if r.node.resource_type == "model"]
    node_seconds = {r.node.name: float(r.execution_time) for r in models}
    hooks = sum(sum(v.values()) for k, v in node_tables.items() if k not in node_seconds)
    node_files = {name: sum(node_tables.get(name, {}).values()) for name in node_seconds}
    hooks += sum(outside.values())
    return BuildSample(seconds, node_seconds, node_files, node_tables, hooks)


def run(ctx: BenchContext) -> BenchResult:
    size, began, spark = SIZES[ctx.size], time.perf_counter(), ctx.spark
    root = ctx.work_dir / f"b6-{ctx.size}"
    shutil.rmtree(root, ignore_errors=True)
    sides = [Side(ctx, root, m, size) for m in size.multipliers]
    store = root / "store"
    batches = max(side.history for side in sides) + 1
    scale = Scale(
        users=size.users,
        videos=size.videos,
        events_per_batch=size.events_per_batch,
        batches=batches,
        days_per_batch=1.0,
    )
    ctx.log(f"b6: generating {batches} batches of {size.events_per_batch:,} events")
    LandingGenerator(store, SEED, scale).run(log=lambda _: None)

    data_files: dict[str, dict[str, int]] = {}
    for side in sides:
        side.drop()
        side.land(store, range(1, side.history + 1), landed_ago_s=86_400)
        ctx.log(f"b6 {side.label}: loading {side.history} history batches")
        side.dbt(["build", "--exclude", "resource_type:test", "resource_type:unit_test"])
        side.record()
        data_files[side.label] = {
            table.split(".", 1)[1]: sql(spark, f"select count(*) from {table}.data_files")[0][0]
            for table in side.snapshots
        }
        side.land(store, range(side.history + 1, side.history + 2))

    samples: dict[str, list[BuildSample]] = {side.label: [] for side in sides}
    loads: list[list[float]] = []
    for repeat in range(ctx.repeats):
        loads.append(load_average())
        for side in alternating(sides, repeat):
            side.restore()
            samples[side.label].append(measured_build(side))
        ctx.log(
            f"b6 repeat {repeat + 1}: "
            + ", ".join(f"{label} {s[-1].seconds:.0f}s" for label, s in samples.items())
        )
    loads.append(load_average())
    for side in sides:
        side.drop()
    shutil.rmtree(root, ignore_errors=True)
    return _result(ctx, size, sides, samples, data_files, loads, time.perf_counter() - began)


def _result(
    ctx: BenchContext,
    size: B6Size,
    sides: list[Side],
    samples: dict[str, list[BuildSample]],
    data_files: dict[str, dict[str, int]],
    loads: list[list[float]],
    seconds: float,
) -> BenchResult:
    labels = [side.label for side in sides]
    small, large = labels[0], labels[-1]
    nodes = list(samples[small][0].node_seconds)

    def node_time(label: str, node: str) -> float:
        return median([s.node_seconds.get(node, 0.0) for s in samples[label]])

    def node_files(label: str, node: str) -> int:
        return int(median([s.node_files.get(node, 0) for s in samples[label]]))

    def build_time(label: str) -> float:
        return median([s.seconds for s in samples[label]])

    def build_files(label: str) -> int:
        return int(median([sum(s.node_files.values()) + s.hook_files for s in samples[label]]))

    table: list[dict[str, Any]] = []
    checks: list[Check] = []
    rows = [(node, lambda lb, n=node: node_time(lb, n), lambda lb, n=node: node_files(lb, n))
            for node in nodes]  # fmt: skip
    rows.append(("whole build", build_time, build_files))
    for name, timing, files in rows:
        row: dict[str, Any] = {"model": name}
        row.update({f"{label} s": timing(label) for label in labels})
        row.update({f"{label} files": files(label) for label in labels})
        time_ratio = timing(large) / timing(small) if timing(small) > 0 else 1.0
        file_ratio = files_ratio(files(large), files(small))
        row[f"time {large}/{small}"] = time_ratio
        row[f"files {large}/{small}"] = file_ratio
        table.append(row)
        reason = why(name)
        checks.append(Check(f"{name} time {large}/{small}", time_ratio, GOAL, why=reason))
        checks.append(Check(f"{name} files {large}/{small}", file_ratio, GOAL, why=reason))

    history_rows = {side.label: side.history * size.events_per_batch for side in sides}
    notes = [
        f"history: the landing generator's batches 1..m*{size.history_batches} "
        f"({size.events_per_batch:,} events and one day each; {size.users:,} users, "
        f"{size.videos:,} videos), loaded by one dbt build per side, "
        "so tables have the layout compaction leaves: ODS in a few large files, a file per "
        "day partition; dimensions start without delete files",
        "new batch: the generator's next batch on each side, the same size everywhere; "
        f"max_event_lateness_days = {LATENESS_DAYS}",
        "timed: the incremental `dbt build --exclude resource_type:test "
        "resource_type:unit_test` (models with their maintenance post-hooks; tests excluded: "
        "they check whole tables by design); per model: dbt's execution_time",
        "files: Iceberg's resultDataFiles of every query dbt sent for the node (watermark "
        "queries, model, post-hooks), after pruning; files ratio = large / max(small, 1)",
        "load average (1, 5, 15 min) before each repeat and at the end: "
        + "; ".join(" ".join(f"{v:.2f}" for v in load) for load in loads),
        "history events per side: "
        + ", ".join(f"{label} {events:,}" for label, events in history_rows.items()),
    ]
    result = BenchResult(
        name="b6",
        title=f"one batch onto histories of {', '.join(labels)} (incremental dbt build)",
        size=ctx.size,
        repeats=ctx.repeats,
        params={**asdict(size), "max_event_lateness_days": LATENESS_DAYS, "tests": "excluded"},
        metrics={
            "samples": {label: [asdict(s) for s in runs] for label, runs in samples.items()},
            "data_files_before_batch": data_files,
            "load_average": loads,
        },
        table=table,
        checks=checks,
        notes=notes,
        seconds=seconds,
    )
    write_result(result, ctx, plot)
    return result


def plot(result: BenchResult, path: Path) -> None:
    ratios = [key for key in result.table[0] if key.startswith(("time ", "files "))]
    bar_panels(
        path,
        f"B6 one batch onto growing histories ({result.size})",
        [(key, {row["model"]: float(row[key]) for row in result.table}) for key in ratios],
    )
