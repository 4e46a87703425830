"""Every benchmark at --smoke size inside the shared pytest SparkSession: the code keeps
working and writes well-formed, meaningful results. Timings at this size mean nothing,
so nothing here asserts on time.

B3 (the maintenance decision on a healthy table) and B4 (dbt build vs its SQL replayed) build
the whole project with dbt, B6 (one batch onto growing histories) a warehouse per history
size: a minute and more each even at smoke size, so they are left out of this run (`bench b3
--smoke` runs one); their committed runs are their check, and B6's scan metric, the part its
verdict rests on, is checked here on a real table. B7 (backfill vs full rebuild), B8
(write-audit-publish per run) and B9 (freshness, a warehouse per history) are left out
likewise; what they measure is tested in test_backfill.py and
test_write_audit_publish.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from scripts.bench.cli import NAMES, run_all
from scripts.bench.common import BenchContext, BenchResult
from scripts.bench.scan_metrics import ScanCounter

# b3, b4 and b6-b10 build warehouses with dbt, b12 files too large for the suite, b11 starts
# object storage and a JVM of the s3 target, b13 JVMs of their own (test_session.py checks
# the archive it measures is used), b14 a warehouse and processes of its own
# (test_dev_server.py checks the dev server it measures), b15 a warehouse built by dbt
# (test_warehouse.py, test_maintenance.py and test_object_store.py prove retention and
# erasure): their committed runs are their check
FULL_SIZE_ONLY = ("b3", "b4", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15")
SMOKE = [name for name in NAMES if name not in FULL_SIZE_ONLY]


SCHEMAS = ("bench", "ods", "dwd", "dws", "landing")


def tables_in(spark, schemas: tuple[str, ...]) -> set[str]:
    """Every table and view of these schemas (another test file on this worker may have
    built the warehouse before the benchmarks run)."""
    names = set()
    for schema in schemas:
        if spark.sql(f"show schemas like '{schema}'").count():
            rows = spark.sql(f"show tables in {schema}").collect()
            names |= {f"{schema}.{r.tableName}" for r in rows if not r.isTemporary}
    return names


@pytest.fixture(scope="module")
def tables_before(spark) -> set[str]:
    return tables_in(spark, SCHEMAS)


@pytest.fixture(scope="module")
def results(spark, data_dir: Path, tmp_path_factory: pytest.TempPathFactory, tables_before):
    out = tmp_path_factory.mktemp("bench")
    ctx = BenchContext(
        spark=spark,
        out=out,
        size="smoke",
        repeats=1,
        target="ci",
        work_dir=data_dir / "bench",
        log=lambda _: None,
    )
    return out, {result.name: result for result in run_all(ctx, SMOKE)}


def rows(result: BenchResult, key: str) -> dict:
    return {row[key]: row for row in result.table}


def test_every_benchmark_writes_json_plot_and_summary(results):
    out, by_name = results
    summary = (out / "summary.md").read_text()
    for name in SMOKE:
        document = json.loads((out / f"{name}.json").read_text())
        assert document["name"] == name and document["table"] and document["checks"]
        assert document["machine"]["cores"] and "1.10.2" in document["machine"]["iceberg"]
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"## {name.upper()} " in summary
        for check in by_name[name].checks:
            assert math.isfinite(check.ratio) and check.ratio >= 0, check
            assert check.met or check.why, f"{name}: a missed goal must say why"
    assert summary.count("cores") >= len(SMOKE)


def test_b1_layouts_hold_the_same_rows_and_sorting_prunes_files(results):
    b1 = results[1]["b1"]
    layouts = rows(b1, "layout")
    assert set(layouts) == {"as-is", "binpack", "sort", "zorder"}
    assert b1.metrics["answers_agree"]
    assert all(row["data files"] > 0 and row["data bytes"] > 0 for row in layouts.values())
    assert layouts["sort"]["files 3-user"] < layouts["binpack"]["files 3-user"]
    assert layouts["sort"]["files 1-user"] <= layouts["sort"]["files 3-user"]
    # a day-range aggregate prunes by partition whatever the layout
    assert layouts["sort"]["files day-range"] < layouts["sort"]["data files"]


def test_b2_merge_on_read_writes_less_and_both_modes_agree(results):
    b2 = results[1]["b2"]
    assert b2.metrics["answers_agree"]
    for row in b2.table:
        assert row["MOR bytes"] < row["COW bytes"]
        assert row["COW merge s"] > 0 and row["MOR read after compaction s"] > 0
    for case in b2.metrics["cases"].values():
        assert min(case["merge-on-read"]["delete_files_added"]) > 0
        assert max(case["copy-on-write"]["delete_files_added"]) == 0


def test_b5_merges_one_batch_into_every_target(results):
    b5 = results[1]["b5"]
    assert len(b5.table) == 3
    assert all(row["merge s"] > 0 and row["bytes written"] > 0 for row in b5.table)


def test_b5_bucketed_side_joins_without_shuffling_either_side(results):
    """The storage-partitioned join really happened: the two shuffles of the join are gone."""
    targets = rows(results[1]["b5"], "target")
    assert targets["100k bucketed"]["shuffles"] <= targets["100k"]["shuffles"] - 2


def test_scan_counter_leaves_no_listener_behind(spark):
    """Each ScanCounter unregisters itself: a leftover listener would call back into Python
    on every later query of the session, slowing every benchmark after it."""
    listeners = spark._jsparkSession.listenerManager()
    before = len(listeners.listListeners())
    for _ in range(2):
        with ScanCounter(spark):
            spark.sql("select 1").collect()
    assert len(listeners.listListeners()) == before


def test_scan_counter_counts_the_files_a_query_planned(spark):
    """B6's files-scanned figure: Iceberg's resultDataFiles, after partition pruning."""
    table = "bench.scan_counter_days"
    spark.sql("create schema if not exists bench")
    spark.sql(f"drop table if exists {table} purge")
    spark.sql(f"create table {table} (day int, n int) using iceberg partitioned by (day)")
    for day in (1, 2, 3):  # one commit per day: a file per partition
        spark.sql(f"insert into {table} values ({day}, {day})")
    try:
        with ScanCounter(spark) as scans:
            spark.sql(f"select sum(n) from {table} where day = 2").collect()
            one_day = scans.take()
            spark.sql(f"select sum(n) from {table}").collect()
            every_day = scans.take()
        assert not scans.errors
        assert one_day == {f"spark_catalog.{table}": 1}, one_day
        assert every_day == {f"spark_catalog.{table}": 3}, every_day
    finally:
        spark.sql(f"drop table if exists {table} purge")


def test_benchmarks_leave_no_tables_behind(spark, results, tables_before):
    left = tables_in(spark, SCHEMAS) - tables_before
    assert not left, f"the benchmarks left {sorted(left)}"
