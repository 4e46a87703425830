"""B14 the modeller's loop: one DWS model run, compiled and shown on a built warehouse (two
landed batches), cold and on the warm engine, against the floor of a fresh process.

Every measurement is a process of its own, timed from launch to exit:
- the floor: a fresh Python process that starts the project's session and writes the
  model's compiled statement into an Iceberg table (what the model costs cold);
- cold: plain `dbt run|compile|show -s dws_video__daily`, as a modeller types it;
- warm: `lakehouse dev run|compile|show -s dws_video__daily`, run in the dev server
  (scripts/dev_server.py), started once and warmed by one run before the measurements.
The cold cases alternate their order from one repeat to the next. The machine's yardstick
(.ci/yardstick.py) is measured in the same run, and every median is also given in
yardsticks. Goals: cold run / floor <= 1.5, warm run / floor <= 0.5.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
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
from scripts.bench.process_tree import data_folder_env, run_measured
from scripts.bench.warehouse_side import land_batches, load_average
from scripts.class_archive import build as record_class_archive
from scripts.generate_landing import LandingGenerator, Scale
from scripts.spark_config import PROJECT_DIR

MODEL = "dws_video__daily"
COMPILED = Path("target/compiled/lakehouse/models/dws") / f"{MODEL}.sql"
# full: two batches of the sample `make build` lands (the generator's defaults), a
# modeller's warehouse
SIZES = {
    "smoke": Scale(users=200, videos=50, events_per_batch=300, batches=2),
    "medium": Scale(events_per_batch=1_000, batches=2),
    "full": Scale(batches=2),
}
COMMANDS = ("run", "compile", "show")
FLOOR = """
import sys
from scripts.session import get_spark
spark = get_spark("local")
spark.sql("create schema if not exists b14_floor")
spark.sql("create or replace table b14_floor.model using iceberg as " + open(sys.argv[1]).read())
"""
# the machine's fixed workload, as .ci/run measures it (a copy of the shared file)
SHARED_YARDSTICK = PROJECT_DIR.parent / "shared" / "yardstick.py"
YARDSTICK = SHARED_YARDSTICK if SHARED_YARDSTICK.is_file() else PROJECT_DIR / ".ci" / "yardstick.py"


def executable(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def yardstick_seconds(log: Path) -> float:
    done = subprocess.run([sys.executable, str(YARDSTICK), "--json"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    log.write_text(done.stdout + done.stderr)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["yardstick_s"])


class Warehouse:
    """A data folder with two landed batches, built by two plain `dbt build`s."""

    def __init__(self, ctx: BenchContext, root: Path) -> None:
        self.ctx, self.root, self.data = ctx, root, root / "data"
        self.env = data_folder_env(self.data)
        self.runs = 0

    def process(self, argv: list[str], what: str) -> float:
        self.runs += 1
        log = self.root / f"{self.runs:03d}-{what}.log"
        return run_measured(argv, self.env, PROJECT_DIR, log).seconds

    def dbt(self, *args: str) -> list[str]:
        return [executable("dbt"), *args, "--profiles-dir", "profiles"]

    def build(self, scale: Scale) -> None:
        store = self.root / "store"
        LandingGenerator(store, SEED, scale).run(log=lambda _: None)
        for batch in range(1, scale.batches + 1):
            land_batches(store, self.data / "landing", range(batch, batch + 1))
            seconds = self.process(self.dbt("build"), f"build-{batch}")
            self.ctx.log(f"b14 build of batch {batch}: {seconds:.0f}s")
        self.process(self.dbt("compile", "-s", MODEL), "compile-for-the-floor")
        shutil.copy(self.data / COMPILED, self.root / "model.sql")

    def cold(self, command: str) -> float:
        if command == "floor":
            floor = [sys.executable, "-c", FLOOR, str(self.root / "model.sql")]
            return self.process(floor, "floor")
        return self.process(self.dbt(command, "-s", MODEL), f"cold-{command}")

    def warm(self, command: str) -> float:
        client = [executable("lakehouse"), "dev", command, "-s", MODEL]
        return self.process(client, f"warm-{command}")


def start_dev_server(warehouse: Warehouse) -> subprocess.Popen[str]:
    server = subprocess.Popen(
        [executable("lakehouse"), "dev-server"], cwd=PROJECT_DIR, env=warehouse.env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    lines = []
    for line in server.stdout:
        lines.append(line)
        if "dev server ready" in line:
            return server
    raise RuntimeError("the dev server did not start:\n" + "".join(lines[-40:]))


def stop_dev_server(server: subprocess.Popen[str]) -> None:
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=60)


def run(ctx: BenchContext) -> BenchResult:
    began = time.perf_counter()
    record_class_archive(log=ctx.log)  # a cold process as a user's: with the archive
    root = ctx.work_dir / f"b14-{ctx.size}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    loads = [load_average()]
    yardsticks = [yardstick_seconds(root / "yardstick-before.log")]
    warehouse = Warehouse(ctx, root)
    warehouse.build(SIZES[ctx.size])
    cold_cases = ["floor", *COMMANDS]
    seconds: dict[str, list[float]] = {f"cold {c}": [] for c in cold_cases}
    for repeat in range(ctx.repeats):
        shift = repeat % len(cold_cases)  # each case first in turn
        for case in cold_cases[shift:] + cold_cases[:shift]:
            seconds[f"cold {case}"].append(warehouse.cold(case))
            ctx.log(f"b14 cold {case}, repeat {repeat + 1}: {seconds[f'cold {case}'][-1]:.1f}s")
    loads.append(load_average())
    server = start_dev_server(warehouse)
    try:
        warehouse.warm("run")  # a developer's first command warms the JIT and the parse
        for command in COMMANDS:
            seconds[f"warm {command}"] = []
        for repeat in range(ctx.repeats):
            for command in COMMANDS:
                seconds[f"warm {command}"].append(warehouse.warm(command))
                ctx.log(f"b14 warm {command}, repeat {repeat + 1}: "
                        f"{seconds[f'warm {command}'][-1]:.1f}s")  # fmt: skip
    finally:
        stop_dev_server(server)
    loads.append(load_average())
    yardsticks.append(yardstick_seconds(root / "yardstick-after.log"))
    shutil.rmtree(root, ignore_errors=True)
    return _result(ctx, seconds, yardsticks, loads, time.perf_counter() - began)


def _result(ctx: BenchContext, seconds: dict[str, list[float]], yardsticks: list[float],
            loads: list[list[float]], elapsed: float) -> BenchResult:  # fmt: skip
    yardstick = sum(yardsticks) / len(yardsticks)
    floor = median(seconds["cold floor"])
    table: list[dict[str, Any]] = [
        {
            "case": case,
            "median s": median(runs),
            "yardsticks": median(runs) / yardstick,
            "/ floor": median(runs) / floor,
        }
        for case, runs in seconds.items()
    ]
    cold_ratio = median(seconds["cold run"]) / floor
    warm_ratio = median(seconds["warm run"]) / floor
    checks = [
        Check(f"cold `dbt run -s {MODEL}` / floor", cold_ratio, 1.5,
              why="a cold dbt process pays dbt's own start (its import, its parse) and the "
                  "run's hooks beside the session and the statement: see docs/dev-server.md"),
        Check(f"warm `lakehouse dev run -s {MODEL}` / floor", warm_ratio, 0.5),
    ]  # fmt: skip
    goals = [goal(c.name, f"<= {c.goal}", c.ratio, c.met) for c in checks]
    notes = [
        f"yardstick {yardsticks[0]:.2f} s before and {yardsticks[1]:.2f} s after "
        f"({YARDSTICK.name}, a fixed Spark workload); the yardsticks column uses their mean",
        "each measurement a process of its own on the built warehouse, launch to exit; the "
        "dev server started once and warmed by one run before its measurements",
        "load average (1, 5, 15 min) before the build, after the cold cases and at the end: "
        + "; ".join(" ".join(f"{v:.2f}" for v in load) for load in loads),
    ]
    result = BenchResult(
        name="b14",
        title="the modeller's loop: one model cold, warm, and its floor",
        size=ctx.size,
        repeats=ctx.repeats,
        params={"model": MODEL, "scale": vars(SIZES[ctx.size])},
        metrics={"seconds": seconds, "yardstick_s": yardsticks, "load_average": loads},
        table=table,
        checks=checks,
        notes=notes,
        seconds=elapsed,
        goals=goals,
    )
    write_result(result, ctx, plot)
    return result


def plot(result: BenchResult, path: Path) -> None:
    bar_panels(
        path,
        f"B14 the modeller's loop ({result.size})",
        [("seconds", {row["case"]: float(row["median s"]) for row in result.table})],
    )
