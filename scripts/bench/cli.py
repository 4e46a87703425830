"""Run the benchmarks: each compares two (or more) sides in one run on the same data.

  b1  compaction payoff: event detail as-is vs binpack vs sort by user vs zorder
  b2  merge-on-read vs copy-on-write merges into a 1M and a 10M-row dimension
  b3  maintenance decision on a healthy table vs the model's own run time (dbt,
      in-process); also writes b3_maintenance.json/.md with decision_median_s
  b4  dbt build of all layers vs the same SQL run by one PySpark script
  b5  one CDC batch merged into a 1M vs a 10M-row target
  b6  one batch onto histories of x1, x10 and x100: incremental dbt build, per model
  b7  backfill of a range of days vs a full rebuild of DWD and DWS
  b8  a scheduled dbt build with write-audit-publish vs writing main directly
  b9  freshness: one scheduled dbt build (tests, publish) after x1 and x100 histories vs
      a hand-written PySpark job, per phase with its statements
  b10 change feed: one export of a 0.01% change of a dimension of N vs 10 x N rows, from
      its changelog vs comparing two snapshots (time, files read)
  b11 a scheduled dbt build on local disk vs on S3 + a REST catalog (SeaweedFS started
      here; the s3 side in a process of its own), with S3 requests by type and their price
  b12 large files: one landed file loaded into ODS, small vs four times larger (time per
      byte, splits over the cores)
  b13 cold start: a new process (a session, a plain dbt build) with the JVM class archive
      vs without it
  b14 the modeller's loop: `dbt run|compile|show -s` one model, cold and in the dev server,
      vs a fresh process running the model's statement
  b15 retention pass on an event table of N vs 10 x N rows (metadata only), and the
      erasure of 10 users from a warehouse built by dbt (time, files written)

Each writes <out>/<name>.json, <out>/<name>.md, <out>/<name>.png and appends to
<out>/summary.md; <out> defaults to docs/results (committed). Spark runs
in this process on its own data folder (--data-dir, default data/bench), so it never shares
an embedded metastore with another process. --smoke runs tiny sizes (CI keeps the code
working with them; the numbers mean nothing).

    bench all                     # full sizes, 3 repeats
    bench b1 b3 --size medium --repeats 2
    bench all --smoke --out /tmp/bench
    bench b3 b6                   # the committed B3 and B6 results (docs/results/), idle machine
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from scripts.bench.common import SIZES, BenchContext, BenchResult, fmt
from scripts.cli import parser_from_doc
from scripts.spark_config import PROJECT_DIR

NAMES = (
    "b1",
    "b2",
    "b3",
    "b4",
    "b5",
    "b6",
    "b7",
    "b8",
    "b9",
    "b10",
    "b11",
    "b12",
    "b13",
    "b14",
    "b15",
)


def runner(name: str) -> Callable[[BenchContext], BenchResult]:
    """Import lazily: `bench --help` should not load Spark."""
    from scripts.bench import (
        b1_compaction,
        b2_merge_modes,
        b3_maintenance,
        b4_dbt_overhead,
        b5_scaling,
        b6_history,
        b7_backfill,
        b8_write_audit_publish,
        b9_freshness,
        b10_change_feed,
        b11_object_store,
        b12_large_file,
        b13_cold_start,
        b14_inner_loop,
        b15_retention_erasure,
    )

    return {
        "b1": b1_compaction.run,
        "b2": b2_merge_modes.run,
        "b3": b3_maintenance.run,
        "b4": b4_dbt_overhead.run,
        "b5": b5_scaling.run,
        "b6": b6_history.run,
        "b7": b7_backfill.run,
        "b8": b8_write_audit_publish.run,
        "b9": b9_freshness.run,
        "b10": b10_change_feed.run,
        "b11": b11_object_store.run,
        "b12": b12_large_file.run,
        "b13": b13_cold_start.run,
        "b14": b14_inner_loop.run,
        "b15": b15_retention_erasure.run,
    }[name]


def run_all(ctx: BenchContext, names: list[str]) -> list[BenchResult]:
    """Run the named benchmarks on an existing session (the CLI's or pytest's)."""
    results = []
    for name in names:
        started = time.monotonic()
        result = runner(name)(ctx)
        ctx.log(f"{name}: done in {time.monotonic() - started:.0f}s")
        for check in result.checks:
            verdict = "met" if check.met else "MISSED"
            ctx.log(f"   {check.name}: {fmt(check.ratio)} (goal <= {fmt(check.goal)}) {verdict}")
        results.append(result)
    return results


def session(data_dir: Path, target: str) -> SparkSession:
    """A session on the benchmark's own data folder (warehouse and metastore below it)."""
    os.environ["LAKEHOUSE_DATA_DIR"] = str(data_dir.resolve())
    for name in ("LAKEHOUSE_WAREHOUSE_DIR", "LAKEHOUSE_METASTORE_DIR", "LAKEHOUSE_LANDING_DIR"):
        os.environ.pop(name, None)
    from scripts.session import get_spark

    return get_spark(target)


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("bench", __doc__)
    parser.add_argument("names", nargs="+", choices=["all", *NAMES], metavar="all|b1..b15")
    parser.add_argument("--size", choices=SIZES, default="full")
    parser.add_argument("--smoke", action="store_true", help="same as --size smoke --repeats 1")
    parser.add_argument("--repeats", type=int, help="repeats per measurement (default 3)")
    parser.add_argument("--out", type=Path, default=PROJECT_DIR / "docs" / "results")
    parser.add_argument("--data-dir", type=Path, default=PROJECT_DIR / "data" / "bench")
    parser.add_argument("--target", default="local", choices=["local", "ci"])
    args = parser.parse_args(argv)
    size = "smoke" if args.smoke else args.size
    repeats = args.repeats or (1 if args.smoke else 3)
    names = list(NAMES) if "all" in args.names else list(dict.fromkeys(args.names))

    spark = session(args.data_dir, args.target)
    ctx = BenchContext(
        spark=spark,
        out=args.out,
        size=size,
        repeats=repeats,
        target=args.target,
        work_dir=args.data_dir.resolve() / "work",
        log=lambda message: print(message, flush=True),
    )
    results = run_all(ctx, names)
    missed = [f"{r.name}: {c.name}" for r in results for c in r.checks if not c.met]
    print(f"results in {args.out} (summary.md, <name>.json, <name>.md, <name>.png)")
    if missed:
        print("goals missed (see summary.md for why): " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
