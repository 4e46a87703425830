"""Which relation a statement may change, read from its text (dbt/adapters/lakehouse/
statements.py): the adapter keeps a node's `describe` answers until then (no Spark)."""

from __future__ import annotations

import pytest

from dbt.adapters.lakehouse.statements import (
    EVERY_RELATION,
    changed_relation,
    redefined_relation,
    table_properties,
)

CHANGES = [
    ("insert into table wap_ods.ods_client__events select * from t", "ods_client__events"),
    ("insert overwrite wap_dws.dws_user__daily select 1", "dws_user__daily"),
    ("merge into `dwd`.`dim_users__state` as t using s on t.id = s.id", "dim_users__state"),
    ("alter table dwd.dim_users add columns (age int)", "dim_users"),
    ("create or replace table dwd.x using iceberg as select 1", "x"),
    ("create or replace temporary view x__dbt_tmp as select * from dwd.x", "x__dbt_tmp"),
    ("create or replace global temporary view a__this_run as select 1", "a__this_run"),
    ("create table if not exists ops.run_lock using iceberg as select 1", "run_lock"),
    ("drop table if exists dwd.x", "x"),
    ("delete from dwd.x where d < date'2026-01-01'", "x"),
    ("\n  -- back compat for old kwarg name\n  insert into dwd.y select 1", "y"),
    ("/* a comment */ update dwd.z set a = 1", "z"),
]


@pytest.mark.parametrize(("sql", "relation"), CHANGES)
def test_a_statement_that_changes_one_relation_names_it(sql, relation):
    assert changed_relation(sql) == relation


@pytest.mark.parametrize(
    "sql",
    [
        "select * from dwd.x",
        "  describe extended dwd.x",
        "show tables in dwd",
        "set spark.wap.branch = wap_3",
        "-- a comment\nselect 1",
    ],
)
def test_a_read_changes_nothing(sql):
    assert changed_relation(sql) is None


@pytest.mark.parametrize(
    "sql",
    [
        "call system.rollback_to_snapshot('dwd.x', 1)",  # may change the columns: forget all
        "cache table global_temp.x",
        "with s as (select 1) insert into dwd.x select * from s",  # not recognised
        "",
    ],
)
def test_a_statement_it_cannot_read_may_change_every_relation(sql):
    assert changed_relation(sql) == EVERY_RELATION


@pytest.mark.parametrize(
    ("sql", "relation"),
    [
        ("insert into table dwd.events select 1", None),  # rows, not the definition
        ("merge into dwd.state as t using s on t.k = s.k when matched then delete", None),
        ("delete from dwd.state where k = 1", None),
        ("select * from dwd.state", None),
        ("alter table dwd.state write ordered by k ASC NULLS LAST", "state"),
        ("create or replace table dwd.state using iceberg as select 1", "state"),
        ("call spark_catalog.system.rewrite_data_files('dwd.state')", EVERY_RELATION),
    ],
)
def test_only_a_statement_that_may_redefine_a_table_forgets_its_properties(sql, relation):
    assert redefined_relation(sql) == relation


def test_table_properties_are_read_from_the_describe_row():
    listed = (
        "[current-snapshot-id=73,format=iceberg/parquet,sort-order=user_id ASC NULLS LAST,"
        " video_id ASC NULLS LAST,write.distribution-mode=hash,write.wap.enabled=true]"
    )
    properties = table_properties(listed)
    assert properties["sort-order"] == "user_id ASC NULLS LAST, video_id ASC NULLS LAST"
    assert properties["write.distribution-mode"] == "hash"
    assert properties["format"] == "iceberg/parquet" and len(properties) == 5
