"""What every benchmark shares: its context, timing, Iceberg metadata reads, result files.

Ratios are measured side by side in one process on the same data, so noise from other
work on the machine hits both sides alike; medians over repeats damp the rest.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no screen here or in CI
from pyspark.sql import SparkSession

from scripts.iceberg_java import IcebergTable

SIZES = ("smoke", "medium", "full")
SCHEMA = "bench"  # scratch tables of B1, B2 and B5; dropped with PURGE when done


@dataclass
class BenchContext:
    """Where and how big one benchmark run is. `spark` may be a session someone else owns
    (pytest's): the benchmarks never stop it and never change its static settings."""

    spark: SparkSession
    out: Path
    size: str = "full"
    repeats: int = 3
    target: str = "local"  # the dbt target whose profile matches `spark`
    work_dir: Path = field(default_factory=lambda: Path("data/bench/work"))
    log: Callable[[str], None] = print

    def __post_init__(self) -> None:
        if self.size not in SIZES:
            raise ValueError(f"unknown size {self.size!r}; choose one of {SIZES}")
        if self.repeats < 1:
            raise ValueError("repeats must be at least 1")


@dataclass
class Check:
    """One measured ratio against the goal the issue set for it (ratio <= goal)."""

    name: str
    ratio: float
    goal: float
    why: str = ""  # when missed: why, and what would close the gap

    @property
    def met(self) -> bool:
        return math.isfinite(self.ratio) and self.ratio <= self.goal


def goal(name: str, target: str, measured: Any, met: bool) -> dict[str, Any]:
    """One entry of a result's `goals` list: {name, target, measured, met}."""
    value = round(measured, 2) if isinstance(measured, float) else measured
    return {"name": name, "target": target, "measured": value, "met": met}


@dataclass
class BenchResult:
    name: str  # b1 .. b5
    title: str
    size: str
    repeats: int
    params: dict[str, Any]
    metrics: dict[str, Any]  # medians and every raw sample
    table: list[dict[str, Any]]  # rows of the markdown table, first row's keys = columns
    checks: list[Check]
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    # one {name, target, measured, met} per goal the benchmark's issue names
    goals: list[dict[str, Any]] = field(default_factory=list)


# -- timing ---------------------------------------------------------------------------------


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return time.perf_counter() - started, value


def median(samples: list[float]) -> float:
    return statistics.median(samples) if samples else math.nan


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else math.inf


def alternating(sides: list[str], repeat: int) -> list[str]:
    """Both orders in turn, so warming up (JIT, caches) favours neither side."""
    return sides if repeat % 2 == 0 else list(reversed(sides))


# -- Spark and Iceberg --------------------------------------------------------------------


def sql(spark: SparkSession, statement: str) -> list[Any]:
    return spark.sql(statement).collect()


def drop_tables(spark: SparkSession, names: list[str]) -> None:
    for name in names:
        spark.sql(f"drop table if exists {name} purge")


def snapshot_id(spark: SparkSession, table: str) -> int:
    """The table's current snapshot (after a rollback: not the newest one)."""
    loaded = IcebergTable(spark, table).load()
    loaded.refresh()
    return int(loaded.currentSnapshot().snapshotId())


def rollback(spark: SparkSession, table: str, snapshot: int) -> None:
    """Back to a recorded state: each repeat starts from the very same files."""
    if snapshot_id(spark, table) != snapshot:
        spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{table}', {snapshot})")


def snapshot_summary(spark: SparkSession, table: str, snapshot: int) -> dict[str, str]:
    rows = sql(spark, f"select summary from {table}.snapshots where snapshot_id = {snapshot}")
    return dict(rows[0][0])


def bytes_written(summary: dict[str, str]) -> int:
    """Data plus delete files a commit added (Iceberg counts both in added-files-size)."""
    return int(summary.get("added-files-size", 0))


def expressions(spark: SparkSession) -> Any:
    return spark._jvm.org.apache.iceberg.expressions.Expressions


def planned_files(
    spark: SparkSession, table: str, snapshot: int, row_filter: Any = None
) -> dict[str, int]:
    """Data files Iceberg's scan planning keeps for a filter (partition and min/max pruning),
    as {path: bytes}: what a query with that filter opens."""
    scan = IcebergTable(spark, table).load().newScan().useSnapshot(snapshot)
    if row_filter is not None:
        scan = scan.filter(row_filter)
    tasks = scan.planFiles()
    files: dict[str, int] = {}
    iterator = tasks.iterator()
    while iterator.hasNext():
        data_file = iterator.next().file()
        files[str(data_file.location())] = int(data_file.fileSizeInBytes())
    tasks.close()
    return files


# -- the machine ----------------------------------------------------------------------------


def machine(spark: SparkSession) -> dict[str, str]:
    import dbt.version

    system = spark._jvm.java.lang.System
    memory_kib = 0
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                memory_kib = int(line.split()[1])
    return {
        "cores": str(os.cpu_count()),
        "memory": f"{memory_kib / 1024**2:.0f} GiB",
        "java": f"{system.getProperty('java.vm.name')} {system.getProperty('java.version')}",
        "spark": spark.version,
        "iceberg": str(spark._jvm.org.apache.iceberg.IcebergBuild.version()),
        "dbt": dbt.version.__version__,
        "python": platform.python_version(),
        "master": spark.sparkContext.master,
    }


def machine_line(info: dict[str, str]) -> str:
    return (
        f"{info['cores']} cores, {info['memory']}, {info['java']}, Spark {info['spark']} "
        f"({info['master']}), Iceberg {info['iceberg']}, dbt {info['dbt']}"
    )


# -- results --------------------------------------------------------------------------------


def fmt(value: Any) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def markdown(result: BenchResult, info: dict[str, str]) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"## {result.name.upper()} {result.title}",
        "",
        f"{when}, size `{result.size}`, {result.repeats} repeats (medians), "
        f"{result.seconds:.0f} s; {machine_line(info)}",
        "",
    ]
    if result.table:
        columns = list(result.table[0])
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for row in result.table:
            lines.append("| " + " | ".join(fmt(row.get(c, "")) for c in columns) + " |")
        lines.append("")
    if result.checks:
        lines += ["| ratio | measured | goal | met |", "|---|---|---|---|"]
        for check in result.checks:
            lines.append(
                f"| {check.name} | {fmt(check.ratio)} | <= {fmt(check.goal)} | "
                f"{'yes' if check.met else 'NO'} |"
            )
        lines.append("")
    if result.goals:
        lines += ["| goal | target | measured | met |", "|---|---|---|---|"]
        for goal in result.goals:
            measured = goal["measured"]
            shown = (
                ", ".join(f"{k} {fmt(v)}" for k, v in measured.items())
                if isinstance(measured, dict)
                else fmt(measured)
            )
            lines.append(
                f"| {goal['name']} | {goal['target']} | {shown} | "
                f"{'yes' if goal['met'] else 'NO'} |"
            )
        lines.append("")
    for check in result.checks:
        if not check.met and check.why:
            lines.append(f"- missed {check.name}: {check.why}")
    lines += [f"- {note}" for note in result.notes]
    return "\n".join(lines).rstrip() + "\n\n"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def write_result(
    result: BenchResult, ctx: BenchContext, plot: Callable[[BenchResult, Path], None]
) -> dict[str, Path]:
    """<name>.json, <name>.png, <name>.md (this run's markdown) and the same markdown
    appended to summary.md."""
    ctx.out.mkdir(parents=True, exist_ok=True)
    info = machine(ctx.spark)
    paths = {
        "json": ctx.out / f"{result.name}.json",
        "png": ctx.out / f"{result.name}.png",
        "md": ctx.out / f"{result.name}.md",
        "summary": ctx.out / "summary.md",
    }
    document = asdict(result)
    document["checks"] = [{**asdict(c), "met": c.met} for c in result.checks]
    document["machine"] = info
    paths["json"].write_text(json.dumps(_json_safe(document), indent=2, default=str) + "\n")
    plot(result, paths["png"])
    section = markdown(result, info)
    paths["md"].write_text(section)
    with paths["summary"].open("a") as summary:
        summary.write(section)
    return paths


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set environment variables for a block and restore them: the benchmarks may run inside
    a pytest process whose fixtures rely on their own values."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def bar_panels(path: Path, title: str, panels: list[tuple[str, dict[str, float]]]) -> None:
    """One bar chart per measure, side by side: the plot every benchmark writes."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    for axis, (name, values) in zip(axes[0], panels, strict=True):
        labels = list(values)
        heights = [v if math.isfinite(v) else 0.0 for v in values.values()]
        bars = axis.bar(labels, heights, color=["#4c72b0", "#dd8452", "#55a868", "#c44e52"][:4])
        axis.bar_label(bars, labels=[fmt(v) for v in values.values()], fontsize=8)
        axis.set_title(name, fontsize=10)
        axis.tick_params(axis="x", labelrotation=20, labelsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
