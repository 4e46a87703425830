"""B12 large files: one landed file of a small and of a four times larger size, loaded into
ODS by the scheduled path (`dbt run --select ods_client__events` onto a table that already
holds a small first batch: the ledger, the redelivery check and the append; the model's
maintenance steps off, so a compaction decided after the append is not timed), 3 repeats
each.

ODS reads a landed file line by line in splits (spark.sql.files.maxPartitionBytes) spread
over the cores and numbers each line from the splits before it (macros/landing/
ods_landed_lines.sql), so its time follows the file's size and no task holds a file whole.
Per size: the load's seconds, the splits Spark reads the file in, and the reconciliation of
ODS against the file (every line once, numbered as in the file). Goals: time per byte of the
large file within 1.1x the small one's; at least as many splits as cores.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scripts.bench.common import (
    BenchContext,
    BenchResult,
    Check,
    bar_panels,
    goal,
    median,
    write_result,
)
from scripts.bench.dbt_workload import SEED
from scripts.bench.warehouse_side import WarehouseSide, load_average
from scripts.generate_landing import LandingGenerator, Scale

BYTES_PER_EVENT = 300  # the generator's client events, measured: 301 MB for 1,002,502 lines
PROPORTIONAL_GOAL = 1.1  # seconds per byte, large file / small file
# the load alone: a compaction the post-hook may decide on after an append is not reading
NO_MAINTENANCE = {
    "maintenance_overrides": {
        "ods_client__events": {"rewrite_data_files": None, "rewrite_manifests": None,
                               "expire_snapshots": None}
    }
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    label: str
    file_bytes: int  # about: the generator's events of BYTES_PER_EVENT


SIZES = {
    "smoke": [Case("1 MiB", 2**20), Case("4 MiB", 2**22)],
    "medium": [Case("64 MiB", 2**26), Case("256 MiB", 2**28)],
    "full": [Case("256 MiB", 2**28), Case("1 GiB", 2**30)],
}


@dataclass
class Sample:
    seconds: float
    file_bytes: int
    lines: int  # in the file, counted by this script
    splits: int  # Spark's splits of the file (tasks of the read)


class OdsSide(WarehouseSide):
    """One landed file of `case`'s size as batch 2, after a small batch 1."""

    def measured(self, path: Path) -> Sample:
        started = time.perf_counter()
        self.dbt(["run", "--select", "ods_client__events"], variables=NO_MAINTENANCE)
        seconds = time.perf_counter() - started
        ods = f"{self.prefix}ods.ods_client__events"
        loaded = self.ctx.spark.sql(f"""
            select count(*), count(distinct _source_line), min(_source_line), max(_source_line)
            from {ods} where _batch_id = '000002'""").first()
        lines = count_lines(path)
        if tuple(loaded) != (lines, lines, 1, lines):
            raise AssertionError(f"{self.label}: ODS holds {tuple(loaded)}, the file {lines} lines")
        splits = self.ctx.spark.sql(f"""
            select count(distinct _metadata.file_block_start)
            from {self.prefix}landing.client_events where batch = '000002'""").first()[0]
        return Sample(seconds, path.stat().st_size, lines, int(splits))


def count_lines(path: Path) -> int:
    """Lines as ODS counts them: a final newline ends the last line."""
    count, last = 0, b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 24):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


def run_case(ctx: BenchContext, case: Case, root: Path) -> list[Sample]:
    first, large = root / "store-first", root / f"store-{case.file_bytes}"
    LandingGenerator(first, SEED, Scale(batches=1)).run(log=lambda _: None)
    events = case.file_bytes // BYTES_PER_EVENT
    ctx.log(f"b12: generating one file of about {case.label} ({events:,} events)")
    scale = Scale(events_per_batch=events, batches=1, files_per_batch=1)
    LandingGenerator(large, SEED + 1, scale).run(log=lambda _: None)
    side = OdsSide(ctx, root, f"ods {case.label}", f"b12_{case.file_bytes}_", history=1)
    side.drop()
    side.land(first, range(1, 2), landed_ago_s=86_400)
    side.dbt(["run", "--select", "ods_client__events"], variables=NO_MAINTENANCE)
    side.record()
    batch = side.live / "client_events" / "batch=000002"  # the large file, landed now
    shutil.copytree(large / "landing" / "client_events" / "batch=000001", batch)
    (path,) = batch.glob("*.jsonl")
    samples = []
    for repeat in range(ctx.repeats):
        side.restore()
        samples.append(side.measured(path))
        ctx.log(f"b12 {case.label} repeat {repeat + 1}: {samples[-1].seconds:.1f}s")
    side.drop()
    for folder in (first, large, side.root):
        shutil.rmtree(folder, ignore_errors=True)
    return samples


def run(ctx: BenchContext) -> BenchResult:
    began = time.perf_counter()
    root = ctx.work_dir / f"b12-{ctx.size}"
    shutil.rmtree(root, ignore_errors=True)
    loads = [load_average()]
    samples: dict[str, list[Sample]] = {}
    for case in SIZES[ctx.size]:
        samples[case.label] = run_case(ctx, case, root)
        loads.append(load_average())
    shutil.rmtree(root, ignore_errors=True)
    return _result(ctx, samples, loads, time.perf_counter() - began)


def _result(
    ctx: BenchContext, samples: dict[str, list[Sample]], loads: list[list[float]], seconds: float
) -> BenchResult:
    table: list[dict[str, Any]] = []
    per_byte: dict[str, float] = {}
    for label, runs in samples.items():
        load_s = median([s.seconds for s in runs])
        per_byte[label] = load_s / runs[0].file_bytes
        table.append({
            "file": label,
            "bytes": runs[0].file_bytes,
            "lines": runs[0].lines,
            "splits": runs[0].splits,
            "ODS load s": load_s,
            "MB/s": runs[0].file_bytes / load_s / 1e6,
        })  # fmt: skip
    small, *_, large = samples
    proportional = per_byte[large] / per_byte[small]
    cores = os.cpu_count() or 1
    splits = samples[large][0].splits
    name = f"seconds per byte, {large} / {small}"
    checks = [
        Check(name, proportional, PROPORTIONAL_GOAL, why="see docs/cost.md (large files)"),
        Check(f"cores / splits of the {large} file", cores / splits, 1.0),
    ]
    goals = [
        goal(name, f"<= {PROPORTIONAL_GOAL}", proportional, proportional <= PROPORTIONAL_GOAL),
        goal(f"splits of the {large} file (tasks of its read)", f">= {cores} (cores)",
              splits, splits >= cores),
    ]  # fmt: skip
    notes = [
        "each load: `dbt run --select ods_client__events` (the scheduled path: the ledger, "
        "the redelivery check, one append; maintenance steps off) of one landed file as "
        "batch 2 after a small batch 1; the table rolled back to batch 1 before each repeat",
        "every repeat reconciled: ODS holds each line of the file once, numbered 1..lines",
        "load average (1, 5, 15 min) before each size and at the end: "
        + "; ".join(" ".join(f"{v:.2f}" for v in load) for load in loads),
    ]
    result = BenchResult(
        name="b12",
        title="large files: one landed file loaded into ODS, small vs four times larger",
        size=ctx.size,
        repeats=ctx.repeats,
        params={"cases": [asdict(case) for case in SIZES[ctx.size]]},
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


def plot(result: BenchResult, path: Path) -> None:
    bar_panels(
        path,
        f"B12 large files ({result.size})",
        [
            ("ODS load s", {row["file"]: float(row["ODS load s"]) for row in result.table}),
            ("MB/s", {row["file"]: float(row["MB/s"]) for row in result.table}),
        ],
    )
