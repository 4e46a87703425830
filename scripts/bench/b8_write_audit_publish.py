"""B8 write-audit-publish: what writing on a branch and publishing costs a scheduled run.

One warehouse, one new landing batch per run, `dbt build` of every layer with var
write_audit_publish true and false on alternate batches (each repeat alternates which side
goes first), so both sides load batches of the same size onto the same growing history.
Per run it measures the build's wall time, the publish (on-run-end's publish hook minus the
maintenance it runs after the publish, which the other side runs in its post-hooks), and,
summed over every table of the layers (ODS, DWD, DWS, the SCD-2 snapshots), the snapshots
and metadata commits the run added and the size of the current metadata files (tags and
refs live there).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict
from pathlib import Path

from scripts.bench.common import (
    BenchContext,
    BenchResult,
    alternating,
    bar_panels,
    median,
    ratio,
    sql,
    write_result,
)
from scripts.bench.dbt_workload import LAYERS, Workload, maintenance_lines
from scripts.generate_landing import Scale

SIZES = {
    "smoke": Scale(users=300, videos=80, events_per_batch=800, batches=3),
    "medium": Scale(events_per_batch=2_000),
    "full": Scale(),
}
SIDES = {"write-audit-publish": True, "direct to main": False}
HOOK_LINE = re.compile(r"OK hook: lakehouse\.on-run-end\.1 .* in (?P<s>[\d.]+)s")  # wap_publish


def run(ctx: BenchContext) -> BenchResult:
    scale, began, spark = SIZES[ctx.size], time.perf_counter(), ctx.spark
    runs = 1 + 2 * ctx.repeats  # a first build, then one batch per side and repeat
    workload = Workload(ctx, scale=Scale(**{**asdict(scale), "batches": runs}), name="b8")
    workload.clear_landing()
    workload.reset_warehouse()
    workload.land(1)
    build(workload, write_audit_publish=False)

    samples: dict[str, dict[str, list[float]]] = {side: {} for side in SIDES}
    loads = [os.getloadavg()[0]]
    batch = 1
    for repeat in range(ctx.repeats):
        for side in alternating(list(SIDES), repeat):
            batch += 1
            workload.land(batch)
            before = metadata(spark)
            outcome = build(workload, write_audit_publish=SIDES[side])
            after = metadata(spark)
            maintenance = sum(m.seconds for m in maintenance_lines(outcome.messages).values())
            hook = next((float(m["s"]) for m in map(HOOK_LINE.search, outcome.messages) if m), 0.0)
            measured = {
                "dbt build s": outcome.seconds,
                "publish s": max(hook - maintenance, 0.0) if SIDES[side] else 0.0,
                "snapshots added": after["snapshots"] - before["snapshots"],
                "metadata files added": after["metadata_files"] - before["metadata_files"],
                "metadata bytes": after["metadata_bytes"],
            }
            for key, value in measured.items():
                samples[side].setdefault(key, []).append(value)
            loads.append(os.getloadavg()[0])
        ctx.log(
            f"b8 repeat {repeat + 1}: "
            + ", ".join(f"{s} {v['dbt build s'][-1]:.0f}s" for s, v in samples.items())
        )
    counted = tables(spark)
    workload.reset_warehouse()

    table = [
        {"side": side, **{key: median(values) for key, values in measured.items()}}
        for side, measured in samples.items()
    ]
    wap, direct = (samples[side] for side in SIDES)
    build_ratio = ratio(median(wap["dbt build s"]), median(direct["dbt build s"]))
    result = BenchResult(
        name="b8",
        title="write-audit-publish vs writing main directly, per scheduled run",
        size=ctx.size,
        repeats=ctx.repeats,
        params={**asdict(scale), "tables": len(counted)},
        metrics={"samples": samples, "load_average_1min": loads},
        table=table,
        checks=[],
        notes=[
            f"dbt build time, write-audit-publish / direct: {build_ratio:.2f}",
            f"publish (fast-forwards, tags, branch drops) median {median(wap['publish s']):.1f} s"
            f" for {len(counted)} tables",
            "metadata commits per table and run: the branch created before the write, then"
            " one commit fast-forwarding main, tagging it twice and dropping the branch; the"
            " publish adds no snapshot",
            f"load average (1 min) before and after each run: {[round(x, 2) for x in loads]}",
        ],
        seconds=time.perf_counter() - began,
    )
    write_result(result, ctx, plot)
    return result


def build(workload: Workload, write_audit_publish: bool):
    variables = json.dumps({"write_audit_publish": write_audit_publish})
    return workload.dbt(["build", "--vars", variables], select=[])


def metadata(spark) -> dict[str, int]:
    """Snapshots, metadata commits and current metadata bytes, summed over the layers' tables."""
    totals = {"snapshots": 0, "metadata_files": 0, "metadata_bytes": 0}
    for table in tables(spark):
        totals["snapshots"] += sql(spark, f"select count(*) from {table}.snapshots")[0][0]
        newest = f"select file from {table}.metadata_log_entries order by timestamp desc limit 1"
        path = Path(sql(spark, newest)[0][0].removeprefix("file:"))
        # <version>-<uuid>.metadata.json: the version counts every metadata commit (the log
        # itself keeps only write.metadata.previous-versions-max of them)
        totals["metadata_files"] += int(path.name.split("-")[0])
        totals["metadata_bytes"] += path.stat().st_size if path.is_file() else 0
    return totals


def tables(spark) -> list[str]:
    """The layers' Iceberg tables (their views left out)."""
    found = []
    for schema in LAYERS:
        views = {row.viewName for row in sql(spark, f"show views in {schema}")}
        found += [
            f"{schema}.{row.tableName}"
            for row in sql(spark, f"show tables in {schema}")
            if not row.isTemporary and row.tableName not in views
        ]
    return found


def plot(result: BenchResult, path: Path) -> None:
    rows = {r["side"]: r for r in result.table}
    bar_panels(
        path,
        f"B8 write-audit-publish per run ({result.size})",
        [
            ("dbt build s (median)", {side: row["dbt build s"] for side, row in rows.items()}),
            ("metadata files added", {s: row["metadata files added"] for s, row in rows.items()}),
        ],
    )
