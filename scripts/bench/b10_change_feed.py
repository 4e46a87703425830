"""B10 change feed: one export of what a scheduled run changed in the users dimension, on a
dimension of N and of 10 x N rows, 3 repeats each.

Per size, a warehouse of its own: dbt builds the layers from a small landed batch, the state
`dim_users__state` is then filled with N synthetic users (stamped `lakehouse.rebuilt`, so
dbt's next run of `dim_users__changes` records each of them as an insert: a changelog whose
history is as large as the table), and a batch of changes to 0.01% of the users, spread over
the whole key range, is landed and applied by `dbt run --select +dim_users__changes`. The
export of that run's changes is then timed both ways, side by side:
- `export-changes --changelog`: Iceberg's incremental append read of the changelog between
  its snapshot before and after the run (what the issue asks to scale with the change);
- `export-changes --table`: the state's two snapshots compared by key (the way without a
  changelog; its cost follows the table).
Files read: the distinct data files the export's rows come from (changelog), or the data
files of both snapshots (comparison). Every export is checked: exactly the changed users,
one update_before and one update_after each. Goals: the export on the 10 x N table within
1.3x the time on N, and the same number of files read.
"""

from __future__ import annotations

import json
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
    ratio,
    write_result,
)
from scripts.bench.dbt_workload import SEED
from scripts.bench.dimension import rows_label
from scripts.bench.warehouse_side import WarehouseSide, load_average
from scripts.export_changes import (
    changelog_rows,
    current_snapshot,
    export,
    export_changelog,
)
from scripts.generate_landing import LandingGenerator, Scale

CHANGED_FRACTION = 1e-4  # 0.01% of the users change in the measured run
TIME_GOAL = 1.3  # export seconds, 10 x N / N
FIRST_SYNTHETIC_KEY = 1_000_000_000  # above the generator's user ids
SIZES = {
    "smoke": (10_000, 100_000),
    "medium": (100_000, 1_000_000),
    "full": (1_000_000, 10_000_000),
}


@dataclass
class Sample:
    changelog_s: float
    compare_s: float


@dataclass
class Case:
    rows: int
    changed: int
    changelog_files: int  # data files the changelog export's rows come from
    compare_files: int  # data files of the state's two snapshots
    changelog_run_s: float  # the dbt run that applied the changes and recorded them
    samples: list[Sample]


class DimensionSide(WarehouseSide):
    """A warehouse whose users dimension holds `rows` synthetic users."""

    def fill(self, rows: int) -> None:
        """N users written into the state as its incremental runs would have (ordered by key,
        checked through load 1), then the state stamped rebuilt: the changelog's next run
        records them all."""
        spark, state = self.ctx.spark, f"{self.prefix}dwd.dim_users__state"
        spark.sql(f"""
            insert into {state} by name
            select
                {FIRST_SYNTHETIC_KEY} + id as user_id,
                concat('user_', id) as user_name,
                element_at(array('cn-north', 'cn-south', 'sg', 'us-west'),
                           cast(pmod(id, 4) + 1 as int)) as region,
                pmod(id, 10) = 0 as is_creator,
                cast(1 + pmod(id, 59) as int) as user_level,
                timestamp'2024-01-01' as registered_at,
                'insert' as _change_op,
                false as _is_deleted,
                cast(1 as bigint) as _source_lsn,
                cast(id as bigint) as _source_offset,
                timestamp'2026-01-01' as _source_committed_at,
                cast(1 as bigint) as _load_id,
                timestamp'2026-01-01' as _loaded_at,
                cast(1 as bigint) as _checked_load_id
            from range(0, {rows}, 1, 8)""")
        spark.sql(
            f"select reflect('lakehouse.SnapshotSummary', 'stamp', '{state}', "
            "'lakehouse.rebuilt', 'b10 fill') from values (1)"
        ).collect()

    def land_changes(self, rows: int, changed: int, batch: int) -> list[int]:
        """Updates of `changed` users spread over the key range, as one complete batch."""
        step = rows // changed
        keys = [FIRST_SYNTHETIC_KEY + i * step for i in range(changed)]
        folder = self.live / "appdb_users" / f"batch={batch:06d}"
        folder.mkdir(parents=True)
        lines = [
            json.dumps({
                "op": "+U", "user_id": key, "user_name": f"changed {key}", "region": "sg",
                "is_creator": False, "level": 7, "registered_at": "2024-01-01T00:00:00.000Z",
                "_source_lsn": 10**15 + n, "_source_committed_at": "2026-11-01T00:00:00.000Z",
                "_kafka_partition": 0, "_kafka_offset": 10**12 + n,
            })
            for n, key in enumerate(keys)
        ]  # fmt: skip
        (folder / "part-00000.jsonl").write_text("\n".join(lines) + "\n")
        (folder / "_SUCCESS").write_text("")
        return keys


def checked(path: Path, keys: list[int], key: str = "user_id") -> None:
    """The export holds each changed user once before and once after, and nothing else."""
    changes = [json.loads(line) for line in path.read_text().splitlines()]
    kinds = sorted((c["_change_type"], c[key]) for c in changes)
    expected = sorted([("update_after", k) for k in keys] + [("update_before", k) for k in keys])
    if kinds != expected:
        raise AssertionError(f"{path}: {len(changes)} changes, expected {len(expected)}")


def run_case(ctx: BenchContext, rows: int, root: Path) -> Case:
    spark = ctx.spark
    store = root / "store"
    if not store.exists():
        LandingGenerator(store, SEED, Scale(batches=1)).run(log=lambda _: None)
    label = rows_label(rows)
    side = DimensionSide(ctx, root, f"dimension {label}", f"b10_{label.lower()}_", history=1)
    side.drop()
    side.land(store, range(1, 2))
    side.dbt(["build"])
    ctx.log(f"b10 {label}: filling the dimension with {rows:,} users")
    side.fill(rows)
    side.dbt(["run", "--select", "dim_users__changes"])
    changelog, state = f"{side.prefix}dwd.dim_users__changes", f"{side.prefix}dwd.dim_users__state"
    history = spark.sql(f"select count(*) from {changelog}").first()[0]
    if history < rows:
        raise AssertionError(f"b10 {label}: the changelog holds {history} rows, not {rows}+")
    changed = max(1, round(rows * CHANGED_FRACTION))
    keys = side.land_changes(rows, changed, batch=2)
    before = (current_snapshot(spark, changelog), current_snapshot(spark, state))
    started = time.perf_counter()
    side.dbt(["run", "--select", "+dim_users__changes"])
    run_s = time.perf_counter() - started
    after = (current_snapshot(spark, changelog), current_snapshot(spark, state))
    samples = []
    for repeat in range(ctx.repeats):
        out = root / f"{label}-{repeat}"
        started = time.perf_counter()
        export_changelog(spark, changelog, out / "changelog.jsonl", before[0], after[0])
        changelog_s = time.perf_counter() - started
        checked(out / "changelog.jsonl", keys)
        started = time.perf_counter()
        export(spark, state, ["user_id"], out / "compare.jsonl", before[1], after[1])
        compare_s = time.perf_counter() - started
        checked(out / "compare.jsonl", keys)
        samples.append(Sample(changelog_s, compare_s))
        ctx.log(f"b10 {label} repeat {repeat + 1}: changelog {changelog_s:.2f}s, "
                f"compare {compare_s:.2f}s")  # fmt: skip
    read = changelog_rows(spark, changelog, before[0], after[0]).select("_file").distinct()
    compared = sum(
        spark.sql(f"select count(*) from {state}.files version as of {snapshot} "
                  "where content = 0").first()[0]
        for snapshot in (before[1], after[1])
    )  # fmt: skip
    case = Case(rows, changed, read.count(), compared, run_s, samples)
    side.drop()
    shutil.rmtree(side.root, ignore_errors=True)
    return case


def run(ctx: BenchContext) -> BenchResult:
    began = time.perf_counter()
    root = ctx.work_dir / f"b10-{ctx.size}"
    shutil.rmtree(root, ignore_errors=True)
    loads = [load_average()]
    cases = []
    for rows in SIZES[ctx.size]:
        cases.append(run_case(ctx, rows, root))
        loads.append(load_average())
    shutil.rmtree(root, ignore_errors=True)
    return _result(ctx, cases, loads, time.perf_counter() - began)


def _result(
    ctx: BenchContext, cases: list[Case], loads: list[list[float]], seconds: float
) -> BenchResult:
    table: list[dict[str, Any]] = []
    for case in cases:
        table.append({
            "dimension rows": rows_label(case.rows),
            "changed users": case.changed,
            "changelog export s": median([s.changelog_s for s in case.samples]),
            "changelog files read": case.changelog_files,
            "compare export s": median([s.compare_s for s in case.samples]),
            "compare files read": case.compare_files,
            "dbt run s (apply + record)": case.changelog_run_s,
        })  # fmt: skip
    small, large = table
    times = ratio(large["changelog export s"], small["changelog export s"])
    same_files = large["changelog files read"] == small["changelog files read"]
    compare_times = ratio(large["compare export s"], small["compare export s"])
    name = f"changelog export s, {large['dimension rows']} / {small['dimension rows']} rows"
    checks = [Check(name, times, TIME_GOAL, why="see docs/change-feed.md")]
    goals = [
        goal(name, f"<= {TIME_GOAL}", times, times <= TIME_GOAL),
        goal("changelog files read, 10 x N vs N", "equal",
             f"{large['changelog files read']} vs {small['changelog files read']}", same_files),
    ]  # fmt: skip
    notes = [
        f"the same run's changes exported both ways; comparing two snapshots of the state, "
        f"the 10 x N table took {compare_times:.2f}x the time on N (its cost follows the "
        "table; the changelog's follows the change)",
        "every export checked: each changed user once before and once after, nothing else",
        "load average (1, 5, 15 min) before each size and at the end: "
        + "; ".join(" ".join(f"{v:.2f}" for v in load) for load in loads),
    ]
    result = BenchResult(
        name="b10",
        title="change feed: one export of a 0.01% change, dimension of N vs 10 x N rows",
        size=ctx.size,
        repeats=ctx.repeats,
        params={"rows": list(SIZES[ctx.size]), "changed_fraction": CHANGED_FRACTION},
        metrics={"cases": [asdict(case) for case in cases], "load_average": loads},
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
        f"B10 change feed ({result.size})",
        [
            ("changelog export s",
             {row["dimension rows"]: float(row["changelog export s"]) for row in result.table}),
            ("compare export s",
             {row["dimension rows"]: float(row["compare export s"]) for row in result.table}),
        ],
    )  # fmt: skip
