"""B3 maintenance overhead: the health-aware decision (iceberg_maintenance post-hook) on a
healthy table vs the model's own run time.

The project's models are built from landed batches, then each repeat lands one more batch
and runs `dbt run`, as a scheduler would. The post-hook logs its own duration per model; a
run where every step was skipped measures the decision alone (one metadata query). The
model's own time is dbt's execution time of the node minus that duration. Runs where a
step acted (a compaction was due) are counted but not used for the decision's cost.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from scripts.bench.common import (
    BenchContext,
    BenchResult,
    Check,
    bar_panels,
    median,
    ratio,
    write_result,
)
from scripts.bench.dbt_workload import Workload, maintenance_lines


def run(ctx: BenchContext) -> BenchResult:
    began, workload = time.perf_counter(), Workload(ctx)
    initial = workload.scale.batches
    workload.generate(initial + ctx.repeats)
    workload.reset_warehouse()
    workload.clear_landing()
    workload.land(initial)
    setup = workload.dbt(["run"])
    ctx.log(f"b3: initial build of {initial} batches {setup.seconds:.0f}s")

    samples: dict[str, dict[str, list[Any]]] = {}
    runs = []
    for repeat in range(ctx.repeats):
        workload.land(initial + repeat + 1)
        outcome = workload.dbt(["run"])
        upkeep = maintenance_lines(outcome.messages)
        runs.append(outcome.seconds)
        for node in outcome.results:
            relation = f"{node.node.schema}.{node.node.alias}"
            if relation not in upkeep:
                continue
            entry = samples.setdefault(node.node.name, {"model_s": [], "decision_s": []})
            step = upkeep[relation]
            entry.setdefault("acted", []).append(step.acted)
            if not step.acted:  # healthy: the decision alone
                entry["model_s"].append(float(node.execution_time) - step.seconds)
                entry["decision_s"].append(step.seconds)
        ctx.log(f"b3: run {repeat + 1} with batch {initial + repeat + 1}: {outcome.seconds:.0f}s")
    workload.reset_warehouse()

    table = []
    for model, entry in samples.items():
        table.append(
            {
                "model": model,
                "healthy runs": len(entry["decision_s"]),
                "runs that compacted": sum(entry["acted"]),
                "model s": median(entry["model_s"]),
                "decision s": median(entry["decision_s"]),
                "decision / model": ratio(median(entry["decision_s"]), median(entry["model_s"])),
            }
        )
    healthy = [row for row in table if row["healthy runs"]]
    total_decision = sum(sum(samples[r["model"]]["decision_s"]) for r in healthy)
    total_model = sum(sum(samples[r["model"]]["model_s"]) for r in healthy)
    slowest = max((row["decision s"] for row in healthy), default=float("nan"))
    checks = [
        Check(
            "slowest healthy decision, seconds",
            slowest,
            2.0,
            why="the decision is one Spark job over three metadata tables; its fixed cost "
            "(planning, manifest reads, a job on a busy machine) sets the floor.",
        ),
        Check(
            "decision / model run time, all healthy models",
            ratio(total_decision, total_model),
            0.10,
            why=(
                "at this data size a model's run is itself a few seconds of fixed Spark cost, "
                "so a ~1 s metadata query is a large share; it stays ~1 s as batches grow, so "
                "the share falls with batch size. Deciding from the commit's snapshot summary "
                "(files added, no query) or once per run for all models would cut it."
            ),
        ),
    ]
    result = BenchResult(
        name="b3",
        title="health-aware maintenance decision vs the model's own run time",
        size=ctx.size,
        repeats=ctx.repeats,
        params={
            "landing": {**workload.scale.__dict__, "batches": initial},
            "measured runs": f"{ctx.repeats} x (one new batch, dbt run)",
        },
        metrics={"samples": samples, "run_seconds": runs, "setup_seconds": setup.seconds},
        table=table,
        checks=checks,
        notes=[
            f"dbt run with one new batch: median {median(runs):.0f} s for {len(table)} models",
            "model s excludes the maintenance hook and includes the write-order hook",
        ],
        seconds=time.perf_counter() - began,
    )
    write_result(result, ctx, plot)
    return result


def plot(result: BenchResult, path: Path) -> None:
    rows = [row for row in result.table if row["healthy runs"]]
    bar_panels(
        path,
        f"B3 maintenance decision vs model run ({result.size})",
        [
            ("model s (median)", {r["model"]: r["model s"] for r in rows}),
            ("decision s (median)", {r["model"]: r["decision s"] for r in rows}),
            ("decision / model", {r["model"]: r["decision / model"] for r in rows}),
        ],
    )
