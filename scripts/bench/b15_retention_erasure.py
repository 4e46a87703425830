"""B15 retention and erasure: the nightly retention pass on an event table of 60 day
partitions, holding N and 10 x N rows, side by side; and the erasure of 10 users from a
warehouse the project's dbt models built.

Retention: `dbt run-operation iceberg_maintain_all --args '{select: [dwd_client__events]}'`
with a rule of 40 days on `event_at` (the table's partition source, `days(event_at)`), so the
20 oldest days leave; the table's other maintenance steps are turned off for the pass
(`maintenance_overrides`), so the operation is the retention step and the nightly's own cost.
The table is written by Spark with the detail's partitioning (one file a day); after each
pass it is rolled back to its snapshot before the delete, and the sizes alternate their
order. Measured: the delete's statement time and the whole operation's, and the delete's
commit summary (data files dropped and written: 0 written is metadata only).

Erasure: a warehouse of two landed batches built by `dbt build` (full: 1,000,000 events),
then, each repeat, 10 other users erased: `erase_subjects`, the backfill it prints, and its
finish, each timed. Measured: the wall time, the rows per table (`ops.erasures`) and the data
files the erasure's commits wrote, read from their commit summaries before the finish
expires them.

Goals: retention pass with 10 x the rows / with N <= 1.3 (the delete's time), 0 data files
written; the erasure of 10 users in minutes, not hours (< 1 hour).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from scripts.bench.common import (
    BenchContext,
    BenchResult,
    alternating,
    bar_panels,
    goal,
    median,
    ratio,
    rollback,
    snapshot_id,
    snapshot_summary,
    sql,
    write_result,
)
from scripts.bench.dbt_workload import Workload
from scripts.bench.warehouse_side import load_average
from scripts.generate_landing import Scale

DAYS = 60
KEEP_DAYS = 40  # above the detail's lookback (max_event_lateness_days, 30): accepted
TABLE = "dwd.dwd_client__events"
ROWS = {"smoke": 20_000, "medium": 200_000, "full": 1_000_000}  # N; the other side 10 x N
WAREHOUSE = {
    "smoke": Scale(users=300, videos=80, events_per_batch=1_000, batches=2),
    "medium": Scale(users=20_000, videos=2_000, events_per_batch=50_000, batches=2),
    "full": Scale(users=100_000, videos=10_000, events_per_batch=500_000, batches=2),
}
ERASED_PER_REPEAT = 10
OFF = {
    step: None
    for step in (
        "rewrite_data_files",
        "rewrite_manifests",
        "expire_snapshots",
        "remove_orphan_files",
        "compute_table_stats",
    )
}


def run(ctx: BenchContext) -> BenchResult:
    began = time.perf_counter()
    loads = [load_average()]
    workload = Workload(ctx, scale=WAREHOUSE[ctx.size], name="b15")
    workload.reset_warehouse()
    retention = retention_passes(ctx, workload)
    loads.append(load_average())
    workload.reset_warehouse()
    erasure = erasures(ctx, workload)
    loads.append(load_average())
    workload.reset_warehouse()

    small, large = (f"{n:,} rows" for n in (ROWS[ctx.size], 10 * ROWS[ctx.size]))
    delete = {side: median(retention["delete_s"][side]) for side in (small, large)}
    time_ratio = ratio(delete[large], delete[small])
    written = max(max(v) for v in retention["files_written"].values())
    erase_s = median(erasure["seconds"])
    goals = [
        goal(
            "retention pass, 10 x rows kept / rows kept (delete time)",
            "<= 1.3",
            time_ratio,
            time_ratio <= 1.3,
        ),
        goal("retention pass: data files written (metadata only)", "0", written, written == 0),
        goal(
            f"erasure of {ERASED_PER_REPEAT} users, wall time in seconds",
            "< 3600 (minutes, not hours)",
            erase_s,
            erase_s < 3600,
        ),
    ]
    table = [
        {
            "case": f"retention, {side}",
            "delete s": delete[side],
            "operation s": median(retention["operation_s"][side]),
            "data files dropped": retention["files_dropped"][side][0],
            "data files written": max(retention["files_written"][side]),
        }
        for side in (small, large)
    ] + [
        {
            "case": f"erasure of {ERASED_PER_REPEAT} users, {erasure['events']:,} events",
            "delete s": median(erasure["erase_s"]),
            "operation s": erase_s,
            "data files dropped": median(erasure["files_removed"]),
            "data files written": median(erasure["files_written"]),
        }
    ]
    result = BenchResult(
        name="b15",
        title="retention pass on N vs 10 x N rows; erasure of 10 users from a built warehouse",
        size=ctx.size,
        repeats=ctx.repeats,
        params={
            "days": DAYS,
            "keep_days": KEEP_DAYS,
            "rows": ROWS[ctx.size],
            "warehouse": asdict(WAREHOUSE[ctx.size]),
            "erased_per_repeat": ERASED_PER_REPEAT,
        },
        metrics={"retention": retention, "erasure": erasure, "load_average": loads},
        table=table,
        checks=[],
        notes=[
            f"retention: {DAYS} day partitions, rule of {KEEP_DAYS} days on event_at (the"
            f" partition source): the {DAYS - KEEP_DAYS} oldest days leave; delete time 10 x"
            f" rows / rows: {time_ratio:.2f}",
            "erasure: erase_subjects, its backfill of dws_video__daily and its finish (tags,"
            " snapshots, unreferenced files); 'delete s' is the first step alone, 'data files"
            " dropped' the files the finish removed, 'data files written' those the erasure's"
            " commits added",
            f"load average (1 min) before, between and after: {loads}",
        ],
        seconds=time.perf_counter() - began,
        goals=goals,
    )
    write_result(result, ctx, plot)
    return result


# -- retention ------------------------------------------------------------------------------


def make_events(ctx: BenchContext, rows: int) -> None:
    """The detail's table as the nightly finds it: `rows` events over DAYS days, one data
    file a day (hash distribution), partitioned by days(event_at)."""
    spark = ctx.spark
    spark.sql("create schema if not exists dwd")
    spark.sql(f"drop table if exists {TABLE} purge")
    spark.sql(f"""
        create table {TABLE} using iceberg partitioned by (days(event_at))
        tblproperties ('format-version' = '2', 'write.distribution-mode' = 'hash',
                       'write.parquet.compression-codec' = 'zstd')
        as select
            concat('ev-', id) as event_id,
            id % 100000 as user_id,
            id % 10000 as video_id,
            'play' as event_type,
            timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, cast(id % {DAYS} as int), 0, 0,
                cast(id % 86400 as int)) as event_at,
            cast(id % 60000 as bigint) as watch_ms,
            cast(1 as bigint) as _load_id
        from range({rows})
    """)


def retention_passes(ctx: BenchContext, workload: Workload) -> dict[str, Any]:
    sides = {f"{n:,} rows": n for n in (ROWS[ctx.size], 10 * ROWS[ctx.size])}
    samples: dict[str, dict[str, list]] = {
        key: {side: [] for side in sides}
        for key in ("delete_s", "operation_s", "files_dropped", "files_written")
    }
    variables = json.dumps(
        {
            "retention_overrides": {
                "dwd_client__events": {"column": "event_at", "keep_days": KEEP_DAYS}
            },
            "maintenance_overrides": {"dwd_client__events": OFF},
        }
    )
    for side, rows in sides.items():  # each side's table once; rolled back after each pass
        make_events(ctx, rows)
        before = snapshot_id(ctx.spark, TABLE)
        ctx.spark.sql(f"alter table {TABLE} rename to {TABLE}_{rows}")
        samples.setdefault("snapshot", {})[side] = before
    for repeat in range(ctx.repeats):
        for side in alternating(list(sides), repeat):
            rows = sides[side]
            ctx.spark.sql(f"alter table {TABLE}_{rows} rename to {TABLE}")
            outcome = workload.dbt(
                [
                    "run-operation",
                    "iceberg_maintain_all",
                    "--args",
                    "{select: [dwd_client__events], remove_orphans: false}",
                    "--vars",
                    variables,
                ],
                select=[],
            )
            # dbt prefixes its query comment: the statement is found by its text
            deletes = [t for s, t in outcome.statements if f"delete from {TABLE} " in s]
            if len(deletes) != 1:
                raise RuntimeError(f"{side}: expected one retention delete, got {deletes}")
            samples["delete_s"][side].append(deletes[0])
            samples["operation_s"][side].append(outcome.seconds)
            summary = snapshot_summary(ctx.spark, TABLE, snapshot_id(ctx.spark, TABLE))
            samples["files_dropped"][side].append(int(summary.get("deleted-data-files", 0)))
            samples["files_written"][side].append(
                int(summary.get("added-data-files", 0)) + int(summary.get("added-delete-files", 0))
            )
            kept = sql(ctx.spark, f"select count(*) from {TABLE}")[0][0]
            if not 0 < kept < rows:
                raise RuntimeError(f"{side}: {kept} rows kept of {rows}")
            rollback(ctx.spark, TABLE, samples["snapshot"][side])
            ctx.spark.sql(f"alter table {TABLE} rename to {TABLE}_{rows}")
        ctx.log(
            f"b15 retention repeat {repeat + 1}: "
            + ", ".join(f"{side} {v[-1]:.2f}s" for side, v in samples["delete_s"].items())
        )
    for rows in sides.values():
        ctx.spark.sql(f"drop table if exists {TABLE}_{rows} purge")
    return samples


# -- erasure --------------------------------------------------------------------------------


def erasures(ctx: BenchContext, workload: Workload) -> dict[str, Any]:
    spark = ctx.spark
    workload.clear_landing()
    workload.land(WAREHOUSE[ctx.size].batches)
    for _ in range(WAREHOUSE[ctx.size].batches):  # one scheduled build per landed batch
        workload.dbt(["build"], select=[])
    events = sql(spark, "select count(*) from dwd.dwd_client__events")[0][0]
    # the most active users, every repeat ten others
    users = [
        r[0]
        for r in sql(
            spark,
            f"""
        select user_id from dwd.dwd_client__events group by 1 order by count(*) desc, 1
        limit {ERASED_PER_REPEAT * ctx.repeats}""",
        )
    ]
    samples: dict[str, Any] = {
        "events": events,
        "seconds": [],
        "erase_s": [],
        "backfill_s": [],
        "finish_s": [],
        "rows": [],
        "files_written": [],
        "files_removed": [],
    }
    for repeat in range(ctx.repeats):
        request = f"B15-{repeat + 1}"
        subjects = users[repeat * ERASED_PER_REPEAT : (repeat + 1) * ERASED_PER_REPEAT]
        started_ms = int(time.time() * 1000)
        erase = workload.dbt(
            [
                "run-operation",
                "erase_subjects",
                "--args",
                json.dumps({"request": request, "user_ids": subjects}),
            ],
            select=[],
        )
        line = next(m for m in erase.messages if " recompute: dbt build " in m)
        backfill = workload.dbt(line.split(" recompute: dbt ", 1)[1].split(), select=[])
        written = files_written_since(spark, request, started_ms)
        finish = workload.dbt(
            ["run-operation", "erase_subjects", "--args", f"{{request: {request}, finish: true}}"],
            select=[],
        )
        recorded = dict(
            sql(
                spark,
                f"""select concat(table_name, ' ', action), row_count
                                       from ops.erasures where request = '{request}'""",
            )
        )
        samples["erase_s"].append(erase.seconds)
        samples["backfill_s"].append(backfill.seconds)
        samples["finish_s"].append(finish.seconds)
        samples["seconds"].append(erase.seconds + backfill.seconds + finish.seconds)
        samples["rows"].append(recorded)
        samples["files_written"].append(written)
        samples["files_removed"].append(
            sum(v for k, v in recorded.items() if k.endswith(" expire"))
        )
        ctx.log(f"b15 erasure {request}: {samples['seconds'][-1]:.0f}s, {written} files written")
    return samples


def files_written_since(spark: Any, request: str, since_ms: int) -> int:
    """Data and delete files the erasure's commits added (its deletes, redactions, rewrites and
    backfill), from every changed table's commit summaries after `since_ms`."""
    tables = [
        r[0]
        for r in sql(
            spark,
            f"""
        select distinct table_name from ops.erasures
        where request = '{request}' and action != 'finished'""",
        )
    ]
    total = 0
    for table in tables:
        for (summary,) in sql(
            spark,
            f"""select summary from {table}.snapshots
                                         where committed_at >= timestamp_millis({since_ms})""",
        ):
            total += int(summary.get("added-data-files", 0)) + int(
                summary.get("added-delete-files", 0)
            )
    return total


def plot(result: BenchResult, path: Path) -> None:
    bar_panels(
        path,
        f"B15 retention and erasure ({result.size})",
        [
            ("delete s (median)", {r["case"]: r["delete s"] for r in result.table}),
            ("operation s (median)", {r["case"]: r["operation s"] for r in result.table}),
        ],
    )
