"""B13 cold start: a new process with the JVM class archive vs without it, 3 repeats each,
alternating, every run a process of its own on a fresh data folder (scripts/class_archive.py).

Two cases, each timed from launch to exit (interpreter, JVM and Spark session included):
- a session's start and a few first statements (an Iceberg table created, written, read);
- a plain `dbt build` of one landed batch, as `test_plain_dbt.py` and a first scheduled run
  do it (left out at `--smoke` size).

The "without" side sets LAKEHOUSE_CLASS_ARCHIVE=off; nothing else differs. Goal: each case
faster with the archive (ratio with / without below 1).
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.lakehouse.class_archive import DISABLE_ENV
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
from scripts.bench.process_tree import data_folder_env, run_measured
from scripts.bench.warehouse_side import load_average
from scripts.class_archive import build as record_class_archive
from scripts.generate_landing import LandingGenerator, Scale
from scripts.spark_config import PROJECT_DIR

SIDES = ("with the archive", "without")
FIRST_STATEMENTS = """
from scripts.session import get_spark
spark = get_spark("local")
spark.sql("create schema if not exists cold")
spark.sql("create table cold.t (id bigint, value string) using iceberg")
spark.sql("insert into cold.t select id, cast(id as string) from range(1000)")
assert spark.sql("select count(*) from cold.t").first()[0] == 1000
"""
# the generator's smallest useful batch: the plain dbt build of test_plain_dbt.py
BATCH = Scale(users=200, videos=50, events_per_batch=300, batches=1)


@dataclass(frozen=True)
class Case:
    label: str
    argv: list[str]
    needs_landing: bool


def cases(size: str) -> list[Case]:
    dbt = str(Path(sys.executable).parent / "dbt")
    found = [Case("session and first statements", [sys.executable, "-c", FIRST_STATEMENTS], False)]
    if size != "smoke":
        found.append(Case("plain dbt build, one batch", [dbt, "build", "--profiles-dir",
                                                          "profiles"], True))  # fmt: skip
    return found


def environment_for(data: Path, side: str) -> dict[str, str]:
    own = data_folder_env(data)
    if side == "without":
        own[DISABLE_ENV] = "off"
    return own


def run_case(ctx: BenchContext, case: Case, root: Path, store: Path) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = {side: [] for side in SIDES}
    for repeat in range(ctx.repeats):
        for side in alternating(list(SIDES), repeat):
            data = root / "data"
            shutil.rmtree(data, ignore_errors=True)
            data.mkdir(parents=True)
            if case.needs_landing:
                shutil.copytree(store / "landing", data / "landing")
            log = root / f"{case.label[:7].replace(' ', '-')}-{side[:7].strip()}-{repeat}.log"
            measured = run_measured(case.argv, environment_for(data, side), PROJECT_DIR, log)
            seconds[side].append(measured.seconds)
            ctx.log(f"b13 {case.label}, {side}, repeat {repeat + 1}: {measured.seconds:.1f}s")
    return seconds


def run(ctx: BenchContext) -> BenchResult:
    began = time.perf_counter()
    archive = record_class_archive(log=ctx.log)
    if archive is None:
        raise RuntimeError("b13 needs the class archive: see the message above")
    root = ctx.work_dir / f"b13-{ctx.size}"
    shutil.rmtree(root, ignore_errors=True)
    store = root / "store"
    LandingGenerator(store, SEED, BATCH).run(log=lambda _: None)
    loads = [load_average()]
    samples: dict[str, dict[str, list[float]]] = {}
    for case in cases(ctx.size):
        samples[case.label] = run_case(ctx, case, root, store)
        loads.append(load_average())
    shutil.rmtree(root, ignore_errors=True)
    return _result(ctx, samples, loads, archive, time.perf_counter() - began)


def _result(
    ctx: BenchContext,
    samples: dict[str, dict[str, list[float]]],
    loads: list[list[float]],
    archive: Path,
    seconds: float,
) -> BenchResult:
    table: list[dict[str, Any]] = []
    checks, goals = [], []
    for label, runs in samples.items():
        with_archive, without = median(runs[SIDES[0]]), median(runs[SIDES[1]])
        ratio = with_archive / without
        table.append({"case": label, "with the archive s": with_archive, "without s": without,
                      "saved s": without - with_archive, "with / without": ratio})  # fmt: skip
        name = f"{label}: with the archive / without"
        checks.append(Check(name, ratio, 1.0, why="the archive was not used: see the logs"))
        goals.append(goal(name, "< 1", ratio, ratio < 1))
    notes = [
        f"the archive: {archive.name}, {archive.stat().st_size / 1e6:.0f} MB "
        "(recorded once per installation by `lakehouse build`, `lakehouse test` or "
        "`lakehouse class-archive`)",
        "each run a process of its own on a fresh data folder, timed from launch to exit; "
        "the sides alternate their order from one repeat to the next",
        "load average (1, 5, 15 min) before each case and at the end: "
        + "; ".join(" ".join(f"{v:.2f}" for v in load) for load in loads),
    ]
    result = BenchResult(
        name="b13",
        title="cold start: a new process with the JVM class archive vs without",
        size=ctx.size,
        repeats=ctx.repeats,
        params={"cases": [c.label for c in cases(ctx.size)], "batch": asdict(BATCH)},
        metrics={"seconds": samples, "load_average": loads},
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
        f"B13 cold start ({result.size})",
        [(row["case"], {side: float(row[f"{side} s"]) for side in SIDES}) for row in result.table],
    )
