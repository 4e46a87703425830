"""The adapter adopted by a dbt project that is not this warehouse: `integration_tests/`, with
seeds, a view, a table, an incremental merge model and a snapshot, its own profile and an
ordinary `generate_schema_name`, and none of this warehouse's macros. It gets Iceberg
tables, write-audit-publish, the run lock and maintenance from installing the adapter and
the lines of its `dbt_project.yml` (docs/using-the-adapter.md).

The venv's `dbt` runs it in a subprocess on a fresh data folder, as another team's CI would.
What it wrote is read back from the tables' newest metadata files (pyiceberg), not through
the adapter.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from plain_dbt import PlainDbt, main_table, newest_metadata, ok

from scripts.spark_config import PROJECT_DIR

SCHEMA, PLATFORM_SCHEMA = "shop", "shop_ops"  # the profile's schema; generate_schema_name's 'ops'
TABLES = ("customers", "orders", "customer_totals", "orders_latest", "customers_history")


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> PlainDbt:
    data = tmp_path_factory.mktemp("consumer")
    project = data / "project"
    shutil.copytree(PROJECT_DIR / "integration_tests", project,
                    ignore=shutil.ignore_patterns("target", "logs"))  # fmt: skip
    dbt = PlainDbt(data=data, target_path=data / "target", project=project)
    ok(dbt("build"))
    return dbt


def metadata(warehouse: Path, schema: str, table: str) -> dict:
    return json.loads(newest_metadata(warehouse / f"{schema}.db" / table).read_text())


def main_rows(warehouse: Path, schema: str, table: str) -> list[dict]:
    return main_table(warehouse / f"{schema}.db" / table).to_pylist()


def mains(warehouse: Path) -> dict[str, int]:
    """Each table's main snapshot, as readers of the table see it."""
    return {t: metadata(warehouse, SCHEMA, t)["refs"]["main"]["snapshot-id"] for t in TABLES}


def seed(project: Path, name: str) -> list[dict[str, str]]:
    with (project / "seeds" / f"{name}.csv").open() as rows:
        return list(csv.DictReader(rows))


def test_a_build_publishes_iceberg_tables_logs_maintenance_and_releases_its_lock(
    consumer: PlainDbt,
):
    results = consumer.artifact("run_results.json")["results"]
    assert len(results) >= 10 and all(r["status"] in ("success", "pass") for r in results)
    warehouse = consumer.data / "warehouse"
    # main holds what the models compute from the seeds (computed here from the CSV files)
    orders, customers = seed(consumer.project, "orders"), seed(consumer.project, "customers")
    placed = [o["customer_id"] for o in orders]
    expected = sorted(
        (c["customer_id"], c["name"], str(placed.count(c["customer_id"]))) for c in customers
    )
    totals = main_rows(warehouse, SCHEMA, "customer_totals")
    assert sorted((str(r["customer_id"]), r["name"], str(r["orders"])) for r in totals) == expected
    assert len(main_rows(warehouse, SCHEMA, "orders_latest")) == len(orders)
    # written on the run's branch and published: main is tagged with the run
    assert "run_1" in metadata(warehouse, SCHEMA, "customer_totals")["refs"]
    # the platform's tables sit in generate_schema_name('ops'), its whitespace trimmed
    logged = {row["table_name"] for row in main_rows(warehouse, PLATFORM_SCHEMA, "maintenance_log")}
    assert {f"{SCHEMA}.customer_totals", f"{SCHEMA}.orders_latest"} <= logged
    assert released(warehouse)


def released(warehouse: Path) -> bool:
    lock = main_rows(warehouse, PLATFORM_SCHEMA, "run_lock")
    assert lock, "no run lock row"
    return all(row["holder"] is None for row in lock)


def test_a_failing_test_leaves_every_tables_main_as_it_was(consumer: PlainDbt):
    warehouse = consumer.data / "warehouse"
    before = mains(warehouse)
    # a new order, and a new customer without one: customer_totals' amount is then null
    with (consumer.project / "seeds" / "orders.csv").open("a") as orders:
        orders.write("14,2,42.00,2026-01-05 08:00:00\n")
    with (consumer.project / "seeds" / "customers.csv").open("a") as customers:
        customers.write("4,Margaret,US,2026-01-05 00:00:00\n")
    red = consumer("build")
    assert red.returncode == 1, red.stdout[-3000:]
    assert "not_null_customer_totals_amount" in red.stdout
    assert mains(warehouse) == before
    # the new rows were written, on the run's branch, which is kept to inspect
    for table in ("orders", "customers", "orders_latest"):
        refs = metadata(warehouse, SCHEMA, table)["refs"]
        assert "wap_2" in refs and refs["wap_2"]["snapshot-id"] != before[table], table
    # the adapter created the branch from main before the merge wrote it: the branch's
    # snapshot totals count the whole table (a branch the write creates starts them from
    # zero, and maintenance decides on them)
    latest = metadata(warehouse, SCHEMA, "orders_latest")
    head = latest["refs"]["wap_2"]["snapshot-id"]
    summary = next(s for s in latest["snapshots"] if s["snapshot-id"] == head)["summary"]
    assert int(summary["total-records"]) == len(seed(consumer.project, "orders")), summary
    assert released(warehouse)


def test_a_platform_schema_that_is_no_plain_name_stops_the_run_naming_it(consumer: PlainDbt):
    """A generate_schema_name whose 'ops' is not a plain name (here `shop.ops`): the run lock
    and run records cannot be found there, so the run must fail at its start, never skip its
    publish and lock release and still exit 0."""
    warehouse = consumer.data / "warehouse"
    before = mains(warehouse)
    macro = consumer.project / "macros" / "generate_schema_name.sql"
    original = macro.read_text()
    macro.write_text(original.replace("{{ target.schema }}_{{", "{{ target.schema }}.{{"))
    try:
        stopped = consumer("run", "--select", "customer_totals")
    finally:
        macro.write_text(original)
    assert stopped.returncode != 0
    assert "must be a plain name" in stopped.stdout and "shop.ops" in stopped.stdout
    assert mains(warehouse) == before
