"""B4 dbt overhead: a full `dbt build` of every layer (models, hooks and data tests) vs the
same SQL run by one plain PySpark script in the same session.

"The same SQL" is what dbt itself sent to Spark: a first, unmeasured build records every
statement (dbt's SQLQuery events). The script replays them in order with
`spark.sql(statement).collect()`, minus dbt's catalog introspection (`show ...`,
`describe ...`), which a script that knows its tables does not need. Both sides include the
data tests and start from an empty warehouse on the same landed batches; the sides
alternate order between repeats. The difference is dbt's own cost: parsing, Jinja,
introspection, the adapter's per-statement session handling, result bookkeeping.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from scripts.bench.common import (
    BenchContext,
    BenchResult,
    Check,
    alternating,
    bar_panels,
    median,
    ratio,
    timed,
    write_result,
)
from scripts.bench.dbt_workload import Workload

LEADING_COMMENT = re.compile(r"^\s*(/\*.*?\*/\s*)*", re.DOTALL)
INTROSPECTION = ("show ", "describe ", "desc ")


def statement_kind(statement: str) -> str:
    body = LEADING_COMMENT.sub("", statement).lstrip().lower()
    return "introspection" if body.startswith(INTROSPECTION) else "work"


def replay(ctx: BenchContext, statements: list[str]) -> None:
    for statement in statements:
        ctx.spark.sql(statement.strip().removesuffix(";")).collect()


def run(ctx: BenchContext) -> BenchResult:
    began, workload = time.perf_counter(), Workload(ctx)
    workload.clear_landing()
    workload.land(workload.scale.batches)

    workload.reset_warehouse()
    recorded = workload.dbt(["build"])  # records the SQL; warms up JVM and dbt's parse
    statements = [sql for sql, _ in recorded.statements if statement_kind(sql) == "work"]
    skipped = [(sql, s) for sql, s in recorded.statements if statement_kind(sql) != "work"]
    ctx.log(
        f"b4: recorded {len(recorded.statements)} statements in {recorded.seconds:.0f}s; "
        f"replaying {len(statements)}"
    )

    seconds: dict[str, list[float]] = {"dbt build": [], "PySpark script": []}
    in_spark: list[float] = []
    if ctx.size == "smoke":  # the recording run is the dbt sample: CI stays short
        seconds["dbt build"].append(recorded.seconds)
        in_spark.append(sum(s for _, s in recorded.statements))
    for repeat in range(ctx.repeats):
        for side in alternating(list(seconds), repeat):
            if ctx.size == "smoke" and side == "dbt build":
                continue
            workload.reset_warehouse()
            if side == "dbt build":
                outcome = workload.dbt(["build"])
                seconds[side].append(outcome.seconds)
                in_spark.append(sum(s for _, s in outcome.statements))
            else:
                seconds[side].append(timed(lambda: replay(ctx, statements))[0])
        ctx.log(
            f"b4 repeat {repeat + 1}: "
            + ", ".join(f"{side} {values[-1]:.0f}s" for side, values in seconds.items())
        )
    workload.reset_warehouse()

    dbt_s, script_s = median(seconds["dbt build"]), median(seconds["PySpark script"])
    nodes = len(recorded.results)
    table = [
        {"side": "dbt build", "wall s": dbt_s, "statements": len(recorded.statements)},
        {"side": "PySpark script", "wall s": script_s, "statements": len(statements)},
    ]
    checks = [
        Check(
            "dbt build / PySpark script wall time",
            ratio(dbt_s, script_s),
            1.3,
            why=(
                "dbt's cost is per node and per statement (parse check, Jinja, introspection, "
                "a session lookup per statement), not per row: at small data it is a large "
                "share; larger batches or fewer, bigger models shrink it."
            ),
        )
    ]
    notes = [
        f"{nodes} nodes (models, data and unit tests); both sides include the data tests",
        f"time dbt spent waiting on Spark: median {median(in_spark):.1f} s of {dbt_s:.1f} s "
        f"(dbt wall / its own Spark time = {ratio(dbt_s, median(in_spark)):.2f}, a bound on "
        "dbt's overhead that does not depend on the script's run); "
        f"{len(skipped)} introspection statements ({sum(s for _, s in skipped):.1f} s in Spark) "
        "are not replayed",
        f"landing: {workload.scale.batches} batches of {workload.scale.events_per_batch:,} "
        f"events, {workload.scale.users:,} users, {workload.scale.videos:,} videos",
    ]
    result = BenchResult(
        name="b4",
        title="dbt build vs the same SQL in one PySpark script",
        size=ctx.size,
        repeats=ctx.repeats,
        params={"landing": workload.scale.__dict__, "tests": "included on both sides"},
        metrics={
            "seconds": seconds,
            "dbt_seconds_in_spark": in_spark,
            "recorded_build_seconds": recorded.seconds,
            "statements_replayed": len(statements),
            "statements_introspection": len(skipped),
        },
        table=table,
        checks=checks,
        notes=notes,
        seconds=time.perf_counter() - began,
    )
    write_result(result, ctx, plot)
    return result


def plot(result: BenchResult, path: Path) -> None:
    bar_panels(
        path,
        f"B4 dbt build vs PySpark script ({result.size})",
        [("wall s (median)", {row["side"]: row["wall s"] for row in result.table})],
    )
