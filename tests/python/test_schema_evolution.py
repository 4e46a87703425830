"""Schema evolution without rebuilds, on a scratch project that builds with the real project's
configuration and macros: a column added upstream reaches the table through on_schema_change; a
rename and a widening are metadata migrations (run-operations); a drop is refused while
something uses the column; every change leaves the data files alone, and older snapshots still
read with their own schema. A model with on_schema_change sync_all_columns adds, drops and
widens by itself, and a type change Iceberg cannot make in place fails before the table is
touched.

The model's version is var `v`: 1 the first schema; 2 adds `network`; 3 selects `os` as
`os_name` and `watch_ms` as bigint (after the migrations); 4 no longer selects `network`.
The tests run in file order.
"""

from __future__ import annotations

import json

import pytest
from scratch_project import write_scratch_project

TABLE = "scratch_schema.events"

EVENTS = """
{{ config(schema='scratch_schema', partition_by=['day'], on_schema_change='append_new_columns') }}
{%- set v = var('v') %}
select
    id,
    date'2026-01-01' + cast(id % 3 as int) as day,
    cast(id * 10 as {{ 'bigint' if v >= 3 else 'int' }}) as watch_ms,
    concat('os', id) as {{ 'os_name' if v >= 3 else 'os' }}
    {%- if v in (2, 3) %}, concat('net', id) as network{% endif %}
from range({{ var('first') }}, {{ var('first') }} + 5)
"""

# downstream of events, naming `network`; gone from the project at version 4
USES_NETWORK = """
{{ config(schema='scratch_schema', materialized='view', enabled=var('v') < 4) }}
select id, network from {{ ref('events') }}
"""


# on_schema_change sync_all_columns, version var `s`: 2 widens `amount`, drops `dropped_later`
# and adds `added`; 3 turns `code` from int into string, which Iceberg cannot do in place
SYNCED_TABLE = "scratch_schema.synced"
SYNCED = """
{{ config(schema='scratch_schema', on_schema_change='sync_all_columns') }}
{%- set s = var('s', 1) %}
select
    id,
    cast(id * 10 as {{ 'bigint' if s >= 2 else 'int' }}) as amount,
    {% if s == 1 %}concat('old', id) as dropped_later,{% endif %}
    {% if s >= 2 %}concat('new', id) as added,{% endif %}
    cast(id as {{ 'string' if s >= 3 else 'int' }}) as code
from range({{ var('first') }}, {{ var('first') }} + 3)
"""


class Scratch:
    def __init__(self, project, dbt, spark) -> None:
        self.project, self._dbt, self.spark = project, dbt, spark

    def dbt(self, *args: str, v: int, first: int = 0, expect_success: bool = True, **extra):
        variables = json.dumps({"v": v, "first": first, **extra})
        return self._dbt(
            [*args, "--project-dir", str(self.project), "--vars", variables],
            expect_success=expect_success,
        )

    def run(self, v: int, first: int):
        return self.dbt("run", "--select", "events", v=v, first=first)

    def operation(self, macro: str, v: int, expect_success: bool = True, **args):
        flags = ["--args", json.dumps(args)]
        return self.dbt("run-operation", macro, *flags, v=v, expect_success=expect_success)

    def data_files(self) -> set[str]:
        return {r[0] for r in self.spark.sql(f"select file_path from {TABLE}.data_files").collect()}

    def snapshot(self) -> int:
        query = f"select snapshot_id from {TABLE}.snapshots order by committed_at desc limit 1"
        return self.spark.sql(query).first()[0]

    def schema_at(self, snapshot: int | None = None) -> dict[str, str]:
        """The table's schema now, or as a read of `snapshot` sees it (its own schema)."""
        version = f" version as of {snapshot}" if snapshot else ""
        frame = self.spark.sql(f"select * from {TABLE}{version}")
        return {field.name: field.dataType.simpleString() for field in frame.schema.fields}


@pytest.fixture(scope="module")
def scratch(dbt, spark, tmp_path_factory) -> Scratch:
    root = tmp_path_factory.mktemp("schema_evolution")
    models = {"events.sql": EVENTS, "uses_network.sql": USES_NETWORK, "synced.sql": SYNCED}
    project = write_scratch_project(root, models)
    spark.sql(f"drop table if exists {TABLE} purge")
    spark.sql(f"drop table if exists {SYNCED_TABLE} purge")
    made = Scratch(project, dbt, spark)
    made.run(v=1, first=0)
    return made


def test_a_column_added_upstream_reaches_the_table(scratch):
    files, first = scratch.data_files(), scratch.snapshot()
    scratch.run(v=2, first=5)
    rows = scratch.spark.sql(f"select id, network from {TABLE} order by id").collect()
    assert [r.network for r in rows] == [None] * 5 + [f"net{i}" for i in range(5, 10)]
    assert files <= scratch.data_files()  # the old rows' files were not rewritten
    assert "network" not in scratch.schema_at(first)


def test_a_rename_and_a_widening_are_metadata_only(scratch):
    files, before = scratch.data_files(), scratch.snapshot()
    scratch.operation("rename_column", v=2, model="events", old="os", new="os_name")
    scratch.operation("widen_column", v=2, model="events", column="watch_ms", type="bigint")
    assert scratch.data_files() == files
    now = scratch.schema_at()
    assert now["os_name"] == "string" and now["watch_ms"] == "bigint" and "os" not in now
    row = scratch.spark.sql(f"select os_name, watch_ms from {TABLE} where id = 7").first()
    assert (row.os_name, row.watch_ms) == ("os7", 70)

    scratch.run(v=3, first=10)  # the model now produces the new name and type
    assert scratch.spark.sql(f"select count(os_name) from {TABLE}").first()[0] == 15
    old = scratch.schema_at(before)  # the snapshot before the migration: its own schema
    assert old["os"] == "string" and old["watch_ms"] == "int" and "os_name" not in old


def test_a_narrowing_is_refused(scratch):
    run = scratch.operation(
        "widen_column", v=3, expect_success=False, model="events", column="watch_ms", type="int"
    )
    assert not run.success and "is not a widening Iceberg allows" in run.log
    assert scratch.schema_at()["watch_ms"] == "bigint"


def test_a_drop_is_refused_while_the_column_is_used(scratch):
    run = scratch.operation(
        "drop_column", v=3, expect_success=False, model="events", column="network"
    )
    assert not run.success and "still used by: model uses_network" in run.log
    run = scratch.operation("drop_column", v=4, expect_success=False, model="events", column="day")
    assert not run.success and "events (config partition_by)" in run.log
    assert "network" in scratch.schema_at()


def test_a_dropped_column_stays_readable_in_older_snapshots(scratch):
    files, before = scratch.data_files(), scratch.snapshot()
    scratch.operation("drop_column", v=4, model="events", column="network")
    assert "network" not in scratch.schema_at()
    assert scratch.data_files() == files
    scratch.run(v=4, first=15)
    assert scratch.spark.sql(f"select count(*) from {TABLE}").first()[0] == 20
    old = scratch.spark.sql(f"select network from {TABLE} version as of {before} where id = 12")
    assert old.first().network == "net12"


def test_sync_all_columns_adds_drops_and_widens_in_place(scratch):
    def run_synced(s: int, first: int, expect_success: bool = True):
        return scratch.dbt(
            "run", "--select", "synced", v=4, first=first, s=s, expect_success=expect_success
        )

    def schema() -> dict[str, str]:
        return {f.name: f.dataType.simpleString() for f in scratch.spark.table(SYNCED_TABLE).schema}

    def files() -> set[str]:
        query = f"select file_path from {SYNCED_TABLE}.data_files"
        return {r[0] for r in scratch.spark.sql(query).collect()}

    run_synced(s=1, first=0)
    assert schema() == {"id": "bigint", "amount": "int", "dropped_later": "string", "code": "int"}
    before = files()
    run_synced(s=2, first=3)
    assert schema() == {"id": "bigint", "amount": "bigint", "added": "string", "code": "int"}
    assert before <= files()  # the first rows' files were not rewritten
    rows = scratch.spark.sql(f"select id, amount, added from {SYNCED_TABLE} order by id").collect()
    assert [tuple(r) for r in rows] == [
        (i, i * 10, f"new{i}" if i >= 3 else None) for i in range(6)
    ]

    failed = run_synced(s=3, first=6, expect_success=False)
    assert not failed.success
    assert "the model now produces string where the table has int" in failed.log
    assert "nothing was changed" in failed.log
    assert schema()["code"] == "int" and scratch.spark.table(SYNCED_TABLE).count() == 6
