"""B7 backfill: recomputing seven days of DWD and DWS (dbt's --event-time-start/--event-time-end,
docs/backfill.md) against rebuilding them whole (--full-refresh), side by side on the same
warehouse of ten daily batches at the default sample size (`make sample`'s Scale()).

Both sides run `dbt run --select dwd_client__events+`; each repeat alternates which goes
first. Both read every ODS load (a backfill reranks every copy of an event, as a full build
does): what the backfill saves is writing 7 of the 10 days instead of all of them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
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
from scripts.bench.dbt_workload import Workload
from scripts.generate_landing import Scale


@dataclass(frozen=True)
class B7Size:
    scale: Scale
    start: str  # the backfilled range, end excluded
    end: str


SIZES = {
    "smoke": B7Size(
        Scale(users=300, videos=80, events_per_batch=800, batches=8), "2026-01-02", "2026-01-05"
    ),
    "medium": B7Size(Scale(batches=10), "2026-01-02", "2026-01-09"),
    "full": B7Size(Scale(batches=10), "2026-01-02", "2026-01-09"),
}
SELECT = ["--select", "dwd_client__events+"]


def run(ctx: BenchContext) -> BenchResult:
    size, began, spark = SIZES[ctx.size], time.perf_counter(), ctx.spark
    workload = Workload(ctx, scale=size.scale, name="b7")
    workload.clear_landing()
    workload.land(size.scale.batches)
    workload.reset_warehouse()
    workload.dbt(["run"], select=[])  # every layer, once: what both sides start from
    days = sql(spark, "select count(distinct event_date) from dwd.dwd_client__events")[0][0]
    rows = sql(spark, "select count(*) from dwd.dwd_client__events")[0][0]

    sides = {
        f"backfill {size.start} .. {size.end}": [
            "run", "--event-time-start", size.start, "--event-time-end", size.end,
        ],
        "full rebuild": ["run", "--full-refresh"],
    }  # fmt: skip
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    for repeat in range(ctx.repeats):
        for side in alternating(list(sides), repeat):
            seconds[side].append(workload.dbt(sides[side], select=SELECT).seconds)
            after = sql(spark, "select count(*) from dwd.dwd_client__events")[0][0]
            if after != rows:
                raise RuntimeError(f"{side}: DWD holds {after} rows, {rows} before")
        ctx.log(
            f"b7 repeat {repeat + 1}: "
            + ", ".join(f"{side} {values[-1]:.0f}s" for side, values in seconds.items())
        )
    workload.reset_warehouse()

    backfill, full = list(sides)
    time_ratio = ratio(median(seconds[backfill]), median(seconds[full]))
    table = [
        {
            "side": side,
            "dbt run s": median(values),
            "days written": len_days(size) if side == backfill else days,
        }
        for side, values in seconds.items()
    ]
    result = BenchResult(
        name="b7",
        title="backfill of a range of days vs a full rebuild of DWD and DWS",
        size=ctx.size,
        repeats=ctx.repeats,
        params={**asdict(size.scale), "start": size.start, "end": size.end},
        metrics={"seconds": seconds, "dwd_rows": rows, "days": days},
        table=table,
        checks=[],
        notes=[
            f"backfill / full rebuild time: {time_ratio:.2f}",
            f"{size.scale.batches} daily batches of {size.scale.events_per_batch:,} events; "
            f"DWD {rows:,} rows over {days} days (late events included)",
        ],
        seconds=time.perf_counter() - began,
    )
    write_result(result, ctx, plot)
    return result


def len_days(size: B7Size) -> int:
    from datetime import date

    return (date.fromisoformat(size.end) - date.fromisoformat(size.start)).days


def plot(result: BenchResult, path: Path) -> None:
    bar_panels(
        path,
        f"B7 backfill vs full rebuild ({result.size})",
        [("dbt run s (median)", {r["side"]: r["dbt run s"] for r in result.table})],
    )
