"""B11 object storage: one scheduled run on local disk vs on S3 + an Iceberg REST catalog.

The same landing batches (same seed and scale, so the same bytes) feed two warehouses: the
local target in this process, and the `s3` target in a process of its own
(scripts/bench/s3_side.py) on SeaweedFS started here on free loopback ports. After a first
build on each, every repeat lands one more batch on both and runs `dbt build` of every layer
on each, the order alternating. Per run: wall time, and on the s3 side the S3 requests S3A
sent, by type, priced at S3's public request prices.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from scripts.bench.common import (
    BenchContext,
    BenchResult,
    alternating,
    bar_panels,
    environment,
    median,
    ratio,
    write_result,
)
from scripts.bench.dbt_workload import SEED, Workload
from scripts.generate_landing import Scale
from scripts.spark_config import PROJECT_DIR, environment_without_project_settings

SIZES = {
    "smoke": Scale(users=300, videos=80, events_per_batch=800),
    "medium": Scale(events_per_batch=2_000),
    "full": Scale(),
}
LOCAL, S3 = "local disk", "s3 + REST catalog"
# S3 Standard request prices, USD per 1,000 requests (aws.amazon.com/s3/pricing, us-east-1):
# PUT, COPY, POST and LIST at $0.005; GET and every other request at $0.0004; DELETE free.
PRICE_PER_1000 = {"PUT": 0.005, "COPY": 0.005, "POST": 0.005, "LIST": 0.005, "GET": 0.0004,
                  "HEAD": 0.0004, "DELETE": 0.0}  # fmt: skip
RUNS_PER_MONTH = 96 * 30  # a refresh every 15 minutes


def run(ctx: BenchContext) -> BenchResult:
    from scripts import services

    scale, began = SIZES[ctx.size], time.perf_counter()
    local = Workload(ctx, scale=scale, name="b11")
    local.clear_landing()
    local.reset_warehouse()
    root = ctx.work_dir / f"b11-s3-{ctx.size}"
    shutil.rmtree(root, ignore_errors=True)  # a fresh bucket and catalog: the same history
    settings = services.on_free_ports(root / "services")
    keys = {
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID") or "b11",
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY") or secrets.token_hex(16),
    }
    samples: dict[str, dict[str, list[float]]] = {LOCAL: {}, S3: {}}
    loads = [os.getloadavg()[0]]
    with environment(**keys):
        services.start(settings, log=ctx.log)
        side = S3Side(root, settings, keys, scale)
        try:
            local.land(1)
            local.dbt(["build"], select=[])
            side.build(1)
            for repeat in range(ctx.repeats):
                batch = repeat + 2
                for name in alternating([LOCAL, S3], repeat):
                    if name == LOCAL:
                        local.land(batch)
                        measured = {"dbt build s": local.dbt(["build"], select=[]).seconds}
                    else:
                        report = side.build(batch)
                        measured = {"dbt build s": report["seconds"], **report["requests"]}
                    for key, value in measured.items():
                        samples[name].setdefault(key, []).append(value)
                    loads.append(os.getloadavg()[0])
                ctx.log(
                    f"b11 repeat {repeat + 1}: "
                    + ", ".join(f"{n} {s['dbt build s'][-1]:.0f}s" for n, s in samples.items())
                )
        finally:
            side.close()
            services.stop(settings, log=ctx.log)
    local.reset_warehouse()

    requests = {
        kind: median(values) for kind, values in samples[S3].items() if kind in PRICE_PER_1000
    }
    per_run = sum(count * PRICE_PER_1000[kind] / 1000 for kind, count in requests.items())
    seconds = {name: median(measured["dbt build s"]) for name, measured in samples.items()}
    slower = ratio(seconds[S3], seconds[LOCAL])
    table = [
        {
            "side": side,
            "dbt build s": seconds[side],
            "S3 requests": sum(counts.values()),
            **{kind: counts.get(kind, 0) for kind in PRICE_PER_1000},
            "USD per run": price,
        }
        for side, counts, price in ((LOCAL, {}, 0.0), (S3, requests, per_run))
    ]
    result = BenchResult(
        name="b11",
        title="a scheduled run on local disk vs on S3 + an Iceberg REST catalog",
        size=ctx.size,
        repeats=ctx.repeats,
        params={**asdict(scale), "price_per_1000_requests_usd": PRICE_PER_1000},
        metrics={"samples": samples, "load_average_1min": loads},
        table=table,
        checks=[],
        goals=[
            {
                "name": "wall time of a scheduled run, s3 + REST catalog / local disk",
                "target": "measured side by side on the same batch",
                "measured": slower,
                "met": math.isfinite(slower) and slower > 0,
            },
            {
                "name": "S3 requests per scheduled run, by type",
                "target": "GET/HEAD/LIST/PUT/COPY/POST/DELETE counted (S3A statistics)",
                "measured": requests,
                "met": sum(requests.values()) > 0,
            },
            {
                "name": "request cost at public S3 prices",
                "target": "USD per run and per month of 15-minute refreshes",
                "measured": {"per_run": per_run, "per_month": per_run * RUNS_PER_MONTH},
                "met": per_run > 0,
            },
        ],
        notes=[
            f"wall time s3 + REST / local disk: {slower:.2f}",
            f"S3 requests per run (median): {json.dumps(requests)}",
            f"at public S3 prices: ${per_run:.4f} per run, "
            f"${per_run * RUNS_PER_MONTH:.2f} per month of runs every 15 minutes",
            "the s3 side's store is SeaweedFS on this machine: its latency is loopback's, so "
            "the wall-time ratio is a floor for a remote store; the request counts are not",
            f"load average (1 min) before and after each run: {[round(x, 2) for x in loads]}",
        ],
        seconds=time.perf_counter() - began,
    )
    write_result(result, ctx, plot)
    return result


class S3Side:
    """The `s3` target's process (scripts/bench/s3_side.py), one build per request."""

    def __init__(self, root: Path, settings, keys: dict[str, str], scale: Scale) -> None:
        own = environment_without_project_settings()
        env = {
            **own,
            **keys,
            **settings.process_env(),
            "LAKEHOUSE_DATA_DIR": str(root),
            "DBT_TARGET_PATH": str(root / "target"),
            "DBT_LOG_PATH": str(root / "logs"),
            "B11_SCALE": json.dumps(asdict(scale)),
            "B11_SEED": str(SEED),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "scripts.bench.s3_side"],
            cwd=PROJECT_DIR,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def build(self, batches: int) -> dict:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"build {batches}\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith("RESULT "):
                report = json.loads(line.removeprefix("RESULT "))
                if not report["success"]:
                    raise RuntimeError(f"dbt build of batch {batches} failed on the s3 side")
                return report
        raise RuntimeError(f"the s3 side exited with {self.process.wait()}")

    def close(self) -> None:
        if self.process.poll() is None and self.process.stdin:
            self.process.stdin.write("quit\n")
            self.process.stdin.flush()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()


def plot(result: BenchResult, path: Path) -> None:
    rows = {row["side"]: row for row in result.table}
    kinds = {k: v for k, v in rows[S3].items() if k in PRICE_PER_1000 and v}
    bar_panels(
        path,
        f"B11 local disk vs S3 + REST per scheduled run ({result.size})",
        [
            ("dbt build s (median)", {side: row["dbt build s"] for side, row in rows.items()}),
            ("S3 requests per run, by type", kinds),
        ],
    )
