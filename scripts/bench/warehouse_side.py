"""One side of a history benchmark (B6, B9): a warehouse of its own (var schema_prefix) with
its own landing zone, filled from a store of generated batches, dbt run in this process on
the benchmark's session, and every table rolled back to its snapshots before each repeat,
so every repeat meets the same files."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from scripts.bench.common import BenchContext, environment, rollback, snapshot_id, sql
from scripts.bench.dbt_workload import SOURCES
from scripts.spark_config import PROJECT_DIR, dbt_env

LAYERS = ("ods", "dwd", "dws")


def load_average() -> list[float]:
    with open("/proc/loadavg") as loadavg:
        return [float(v) for v in loadavg.read().split()[:3]]


def is_view(spark: Any, name: str) -> bool:
    rows = sql(spark, f"describe table extended {name}")
    return any(row[0] == "Type" and str(row[1]).upper() == "VIEW" for row in rows)


def layer_tables(spark: Any, layers: tuple[str, ...]) -> list[str]:
    """The Iceberg tables (not views) of the schemas `layers`."""
    found = []
    for schema in layers:
        if spark.sql(f"show schemas like '{schema}'").count():
            found += [
                f"{schema}.{row.tableName}"
                for row in sql(spark, f"show tables in {schema}")
                if not row.isTemporary and not is_view(spark, f"{schema}.{row.tableName}")
            ]
    return found


def snapshots(spark: Any, layers: tuple[str, ...]) -> dict[str, int]:
    return {table: snapshot_id(spark, table) for table in layer_tables(spark, layers)}


def restore(spark: Any, recorded: dict[str, int]) -> None:
    for table, snapshot in recorded.items():
        rollback(spark, table, snapshot)


def land_batches(store: Path, live: Path, batches: range, landed_ago_s: float = 0) -> None:
    """Copy `batches` of a store of generated batches into the landing zone `live`;
    `landed_ago_s` dates their folders back (a history landed long ago: a run lists only the
    folders changed since its last load)."""
    for source in SOURCES:
        for batch in batches:
            target = live / source / f"batch={batch:06d}"
            if not target.exists():
                shutil.copytree(store / "landing" / source / target.name, target)
                # copytree keeps the store's times: date the folder as landed now (or
                # `landed_ago_s` ago), or a store older than the listing margin would
                # hide a new batch from the run's listing of changed folders
                then = time.time() - landed_ago_s
                os.utime(target, (then, then))


class WarehouseSide:
    """`history`: the batches loaded before the measured one; `schemas`: the layers whose
    tables are rolled back (the side's prefix is prepended)."""

    def __init__(
        self,
        ctx: BenchContext,
        root: Path,
        label: str,
        prefix: str,
        history: int,
        schemas: tuple[str, ...] = LAYERS,
    ) -> None:
        self.ctx, self.label, self.prefix, self.history = ctx, label, prefix, history
        self.root = root / label.replace(" ", "_")
        self.live = self.root / "landing"
        self.layers = tuple(f"{prefix}{schema}" for schema in schemas)
        self.snapshots: dict[str, int] = {}

    def land(self, store: Path, batches: range, landed_ago_s: float = 0) -> None:
        land_batches(store, self.live, batches, landed_ago_s)

    def dbt(
        self,
        args: list[str],
        callbacks: list[Any] | None = None,
        variables: dict[str, Any] | None = None,
        threads: int | None = None,
    ) -> Any:
        """dbt in this process with the side's landing zone, target and log folders;
        `threads` overrides the profile's."""
        from dbt.cli.main import dbtRunner

        with environment(LAKEHOUSE_LANDING_DIR=str(self.live)):
            env = dbt_env(self.ctx.target)
        flags = [
            "--target", self.ctx.target,
            "--project-dir", str(PROJECT_DIR),
            "--target-path", str(self.root / "target"),
            "--log-path", str(self.root / "logs"),
            "--vars", json.dumps({"schema_prefix": self.prefix, **(variables or {})}),
            *(["--threads", str(threads)] if threads else []),
        ]  # fmt: skip
        with environment(**env):
            result = dbtRunner(callbacks=callbacks or []).invoke([*args, *flags])
        self.ctx.spark.conf.unset("spark.wap.branch")  # the session outlives the run
        if not result.success:
            raise RuntimeError(f"{self.label}: dbt {' '.join(args)} failed: {result.exception}")
        return result

    def tables(self) -> list[str]:
        return layer_tables(self.ctx.spark, self.layers)

    def record(self) -> None:
        """The tables' current snapshots: what every repeat starts from."""
        self.snapshots = snapshots(self.ctx.spark, self.layers)

    def restore(self) -> None:
        restore(self.ctx.spark, self.snapshots)

    def drop(self) -> None:
        """Every table and view of the side (PURGE); the landing registrations only
        unregistered (their files are the landing zone's)."""
        spark = self.ctx.spark
        for schema in (*self.layers, f"{self.prefix}ops", f"{self.prefix}landing"):
            if not spark.sql(f"show schemas like '{schema}'").count():
                continue
            for row in sql(spark, f"show tables in {schema}"):
                if row.isTemporary:
                    continue
                name = f"{schema}.{row.tableName}"
                if is_view(spark, name):
                    spark.sql(f"drop view if exists {name}")
                else:
                    purge = "" if schema.endswith("landing") else " purge"
                    spark.sql(f"drop table if exists {name}{purge}")
            spark.sql(f"drop schema if exists {schema}")


def main(argv: list[str] | None = None) -> int:
    """`record` a side's tables' snapshots into a JSON file, or `restore` them from it, in a
    process of its own (B9's sides keep their warehouse and metastore in their own data
    folder, LAKEHOUSE_DATA_DIR, which one process at a time may open)."""
    parser = argparse.ArgumentParser(description="record or restore a side's tables")
    parser.add_argument("action", choices=["record", "restore"])
    parser.add_argument("--layers", nargs="+", required=True)
    parser.add_argument("--state", type=Path, required=True)
    parser.add_argument("--target", default="local")
    args = parser.parse_args(argv)
    from scripts.session import get_spark

    spark = get_spark(args.target)
    if args.action == "record":
        args.state.write_text(json.dumps(snapshots(spark, tuple(args.layers))))
    else:
        restore(spark, json.loads(args.state.read_text()))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
