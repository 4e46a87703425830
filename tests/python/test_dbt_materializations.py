"""dbt's materializations on Iceberg through the project's macros, on real tables:
an ordinary merge model (no `merge_delete_when`) updates and inserts with a merge that names
its columns, a snapshot records changes and hard deletes across runs, a full refresh replaces
a table atomically, a view re-run with new SQL serves the new SQL."""

from __future__ import annotations

import json

import pytest
from scratch_project import write_scratch_project

from scripts.bench.scan_metrics import ScanCounter

PLAIN_MERGE = """
{{ config(schema='scratch_merge', unique_key='id', incremental_strategy='merge') }}
{% if var('round') == 1 %}
select 1 as id, 'first' as name union all select 2 as id, 'second' as name
{% else %}
select 2 as id, 'second, updated' as name union all select 3 as id, 'third' as name
{% endif %}
"""


def test_a_plain_merge_model_updates_and_inserts_on_its_second_run(spark, dbt, tmp_path):
    project = write_scratch_project(tmp_path, {"plain_merge.sql": PLAIN_MERGE})
    spark.sql("drop table if exists scratch_merge.plain_merge purge")
    for round_ in (1, 2):
        dbt(["run", "--project-dir", str(project), "--vars", json.dumps({"round": round_})])
    rows = spark.sql("select id, name from scratch_merge.plain_merge order by id").collect()
    assert [tuple(row) for row in rows] == [(1, "first"), (2, "second, updated"), (3, "third")]
    merge = " ".join((project / "target/run/lakehouse/models/plain_merge.sql").read_text().split())
    assert "merge into scratch_merge.plain_merge as DBT_INTERNAL_DEST" in merge
    assert "delete" not in merge.lower()
    # the merge names its columns (dbt-spark's `insert *` needs every target column)
    assert (
        "insert (`id`, `name`) values (DBT_INTERNAL_SOURCE.`id`, DBT_INTERNAL_SOURCE.`name`)"
        in merge
    )
    assert "insert *" not in merge and "update set *" not in merge


KEYED_MERGE = """
{{ config(schema='scratch_merge', unique_key='id', incremental_strategy='merge',
          tblproperties={'format-version': '2', 'write.merge.mode': 'merge-on-read'}) }}
{% if var('round') == 1 %}
select id, 'v1' as name from range(0, 4000, 1, 4)
{% elif var('round') == 2 %}
select cast(id as bigint) as id, 'v2' as name from values (10), (20), (5000) as t(id)
{% else %}
select id, name from {{ this }} where false
{% endif %}
"""


def test_a_merge_reads_only_the_target_files_its_source_keys_can_match(spark, dbt, tmp_path):
    """The source's keys reach the merge as literals: Iceberg skips the target's files whose
    key bounds hold none of them. A source without rows commits nothing."""
    project = write_scratch_project(tmp_path, {"keyed_merge.sql": KEYED_MERGE})
    table = "scratch_merge.keyed_merge"
    spark.sql(f"drop table if exists {table} purge")

    def run(round_: int):
        return dbt(["run", "--project-dir", str(project), "--vars", json.dumps({"round": round_})])

    run(1)
    files = spark.sql(f"select count(*) from {table}.data_files").first()[0]
    assert files == 4  # ids 0-999, 1000-1999, ...: one range per file
    with ScanCounter(spark) as scans:
        run(2)
        scanned = sum(n for name, n in scans.take().items() if name.endswith(table))
    assert scanned == 1, scanned  # the file holding ids 10 and 20, none of the others
    merge = (project / "target/run/lakehouse/models/keyed_merge.sql").read_text()
    assert "DBT_INTERNAL_DEST.id in (10, 20, 5000)" in merge
    changed = spark.sql(f"select id, name from {table} where name = 'v2' order by id").collect()
    assert [tuple(row) for row in changed] == [(10, "v2"), (20, "v2"), (5000, "v2")]
    assert spark.sql(f"select count(*) from {table}").first()[0] == 4001

    snapshots = snapshot_ids(spark, table)
    assert "nothing merged" in run(3).log
    assert snapshot_ids(spark, table) == snapshots


# -- SCD-2 snapshots on Iceberg (dbt-adapters #489) --------------------------------------------

USERS_SNAPSHOT = """
{% snapshot users_history %}
{{ config(target_schema='scratch_snapshot', unique_key='user_id', strategy='check',
          check_cols='all', hard_deletes='invalidate', file_format='iceberg') }}
select user_id, user_name from scratch_snapshot.users
{% endsnapshot %}
"""


def test_a_snapshot_records_a_change_and_invalidates_a_hard_delete(spark, dbt, tmp_path):
    """Two `dbt snapshot` runs across a change (user 2) and a delete (user 3): the second run
    is the one dbt-adapters #489 refuses on Iceberg."""
    project = write_scratch_project(tmp_path, {}, {"users_history.sql": USERS_SNAPSHOT})
    spark.sql("create schema if not exists scratch_snapshot")
    spark.sql("drop table if exists scratch_snapshot.users_history purge")
    spark.sql(
        "create or replace table scratch_snapshot.users (user_id int, user_name string) "
        "using iceberg"
    )
    spark.sql("insert into scratch_snapshot.users values (1, 'ann'), (2, 'bob'), (3, 'cy')")
    dbt(["snapshot", "--project-dir", str(project)])
    spark.sql("update scratch_snapshot.users set user_name = 'bobby' where user_id = 2")
    spark.sql("delete from scratch_snapshot.users where user_id = 3")
    dbt(["snapshot", "--project-dir", str(project)])

    rows = spark.sql(
        "select user_id, user_name, dbt_valid_to is null as is_current "
        "from scratch_snapshot.users_history order by user_id, dbt_valid_from"
    ).collect()
    assert [tuple(row) for row in rows] == [
        (1, "ann", True),
        (2, "bob", False),  # the change closed the old version ...
        (2, "bobby", True),  # ... and opened the new one
        (3, "cy", False),  # the hard delete invalidated the current row
    ]
    provider = spark.sql("describe extended scratch_snapshot.users_history").collect()
    assert ("Provider", "iceberg") in [(row.col_name, row.data_type) for row in provider]


# -- full refresh: one atomic replace, never a drop (dbt-adapters #1145) -----------------------

REFRESHABLE = """
{{ config(schema='scratch_refresh', materialized=var('materialized'),
          incremental_strategy='append') }}
{% if var('fail', false) %}
select cast(raise_error('the refresh query fails') as int) as id
{% else %}
select {{ var('id') }} as id
{% endif %}
"""


def snapshot_ids(spark, table: str) -> list[int]:
    rows = spark.sql(f"select snapshot_id from {table}.history order by made_current_at")
    return [row.snapshot_id for row in rows.collect()]


@pytest.mark.parametrize("materialized", ["incremental", "table"])
def test_a_full_refresh_replaces_the_table_atomically(spark, dbt, tmp_path, materialized):
    project = write_scratch_project(tmp_path, {"refreshable.sql": REFRESHABLE})
    table = f"scratch_refresh.refreshable_{materialized}"
    spark.sql(f"drop table if exists {table} purge")
    (project / "models/refreshable.sql").rename(project / f"models/refreshable_{materialized}.sql")

    def run(expect_success: bool = True, **variables):
        args = ["run", "--project-dir", str(project), "--full-refresh"]
        variables = {"materialized": materialized, **variables}
        return dbt([*args, "--vars", json.dumps(variables)], expect_success=expect_success)

    run(id=1)
    before = snapshot_ids(spark, table)
    failed = run(expect_success=False, fail=True)
    assert "the refresh query fails" in failed.log
    # the failed refresh left the old table readable, at the same snapshot
    assert [row.id for row in spark.sql(f"select id from {table}").collect()] == [1]
    assert snapshot_ids(spark, table) == before

    run(id=2)
    assert [row.id for row in spark.sql(f"select id from {table}").collect()] == [2]
    history = snapshot_ids(spark, table)
    assert history[: len(before)] == before and len(history) > len(before)
    # and time travel still reaches the data before the refresh
    old = spark.sql(f"select id from {table} version as of {before[-1]}").collect()
    assert [row.id for row in old] == [1]


CHANGING_VIEW = """
{{ config(schema='scratch_view', materialized='view') }}
select {{ var('round') }} as round, 'v{{ var('round') }}' as label
"""


def test_a_view_rerun_with_new_sql_serves_the_new_sql(spark, dbt, tmp_path):
    """apache/iceberg #14557: `create or replace view` left the metastore's view text as it was,
    so the view kept serving its first SQL. Unchanged SQL replaces the view in place (readers
    never find it missing); changed SQL re-creates it."""
    project = write_scratch_project(tmp_path, {"changing_view.sql": CHANGING_VIEW})
    spark.sql("drop view if exists scratch_view.changing_view")

    def run(round_: int) -> tuple[list[tuple], bool]:
        """The view's rows after the run, and whether the run dropped the view first."""
        done = dbt(["run", "--project-dir", str(project), "--vars", json.dumps({"round": round_})])
        rows = spark.sql("select * from scratch_view.changing_view").collect()
        return [
            tuple(r) for r in rows
        ], "drop view if exists scratch_view.changing_view" in done.log

    assert run(1) == ([(1, "v1")], False)
    assert run(1) == ([(1, "v1")], False)  # same SQL: replaced in place, never missing
    assert run(2) == ([(2, "v2")], True)


def test_the_project_extends_dbt_spark_by_subclassing_it_not_by_patching(dbt):
    """The `lakehouse` adapter (profiles' `type: lakehouse`) subclasses dbt-spark: after a dbt
    run in this process, neither dbt-spark's adapter nor PyHive's Thrift client is changed."""
    from dbt.adapters.spark.impl import SparkAdapter
    from TCLIService import TCLIService

    from dbt.adapters.lakehouse.impl import LakehouseAdapter

    run = dbt(["compile", "--inline", "select {{ adapter.type() | tojson }} as t", "--quiet"])
    assert '"lakehouse"' in run.log
    assert "try_execute" in LakehouseAdapter._available_
    assert "try_execute" not in SparkAdapter._available_
    assert not hasattr(SparkAdapter, "try_execute")
    assert TCLIService.Client.FetchResults.__module__ == TCLIService.__name__
