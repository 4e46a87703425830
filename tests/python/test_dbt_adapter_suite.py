"""dbt's own adapter suite (dbt-tests-adapter) through the `lakehouse` adapter and this
project's Spark settings.

Every class below is one of dbt's reusable adapter test classes, run in this process on the
one SparkSession of conftest.py: dbt-spark's `session` method calls getOrCreate() and so gets
that session. Each test project is written by dbt's `project` fixture as any dbt project that
installs the adapter: its own macros and the adapter's, none of this warehouse's, and every
model, seed and snapshot an Iceberg table.

Fixtures overridden here, and why (the same pattern as dbt-spark's own functional tests):
- dbt_profile_target: dbt-spark `method: session`, with the project's spark_conf('ci').
- dbt_project_yml: adds `+file_format: iceberg` to each class's project.
- profiles_yml: dbt's version deletes DBT_PROFILES_DIR on teardown; the project's own dbt
  fixture set it for the whole run, so the previous value is restored.
- Spark-specific SQL where dbt's fixtures use Postgres syntax (see each class).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from dbt.tests.adapter.basic.expected_catalog import base_expected_catalog, no_stats
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.empty.test_empty import BaseTestEmpty
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import (
    BaseMergeExcludeColumns,
)
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChange,
)
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.adapter.incremental.test_incremental_unique_id import (
    seeds__seed_csv as unique_key_seed_csv,
)
from dbt.tests.adapter.simple_snapshot.new_record_dbt_valid_to_current import (
    BaseSnapshotNewRecordDbtValidToCurrent,
)
from dbt.tests.adapter.simple_snapshot.new_record_timestamp_mode import (
    BaseSnapshotNewRecordTimestampMode,
)
from dbt.tests.adapter.simple_snapshot.new_record_timestamp_mode import (
    _seed_new_record_mode_statements as dbt_new_record_statements,
)
from dbt.tests.adapter.simple_snapshot.test_ephemeral_snapshot_hard_deletes import (
    BaseSnapshotEphemeralHardDeletes,
)
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.util import relation_from_name

from scripts.spark_config import spark_conf

ICEBERG = {"+file_format": "iceberg"}


def deep_merge(base: dict, extra: dict) -> dict:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# dbt's run_dbt writes manifest.json and run_results.json after every command, the manifest
# twice (after parsing and after the run): 14% of a class's time. Only these classes read
# a JSON artifact; the others read the warehouse and dbt's result objects.
READS_JSON_ARTIFACTS = {"TestEmpty", "TestDocsGenerate"}


@pytest.fixture(scope="class", autouse=True)
def _json_artifacts_only_where_read(request):
    with pytest.MonkeyPatch.context() as patch:
        if getattr(request.cls, "__name__", "") not in READS_JSON_ARTIFACTS:
            patch.setenv("DBT_WRITE_JSON", "false")
        yield


@pytest.fixture(scope="class")
def dbt_profile_target(spark):
    # `spark` first: dbt-spark's getOrCreate() must find the project's session
    return {
        "type": "lakehouse",  # the project's adapter: dbt-spark subclassed
        "method": "session",
        "host": "localhost",
        "threads": 1,
        "server_side_parameters": spark_conf("ci"),
    }


@pytest.fixture(scope="class")
def profiles_yml(profiles_root, dbt_profile_data):
    previous = os.environ.get("DBT_PROFILES_DIR")
    os.environ["DBT_PROFILES_DIR"] = str(profiles_root)
    Path(profiles_root, "profiles.yml").write_text(yaml.safe_dump(dbt_profile_data))
    yield dbt_profile_data
    if previous is None:
        os.environ.pop("DBT_PROFILES_DIR", None)
    else:
        os.environ["DBT_PROFILES_DIR"] = previous


@pytest.fixture(scope="class")
def dbt_project_yml(project_root, project_config_update):
    config = {
        "name": "test",
        "profile": "test",
        "flags": {"send_anonymous_usage_stats": False},
    }
    updates = project_config_update or {}
    if isinstance(updates, str):
        updates = yaml.safe_load(updates)
    config.update(updates)
    config = deep_merge({"models": ICEBERG, "seeds": ICEBERG, "snapshots": ICEBERG}, config)
    Path(project_root, "dbt_project.yml").write_text(yaml.safe_dump(config))
    return config


# -- basic ------------------------------------------------------------------------------------


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestEmpty(BaseEmpty):
    pass


class TestEmptyFlag(BaseTestEmpty):
    pass


class TestEphemeral(BaseEphemeral):
    pass


class TestGenericTests(BaseGenericTests):
    pass


class TestSingularTests(BaseSingularTests):
    pass


class TestSingularTestsEphemeral(BaseSingularTestsEphemeral):
    pass


class TestIncrementalAppend(BaseIncremental):
    pass


class TestIncrementalMerge(BaseIncremental):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {
            "name": "incremental",
            "models": {"+incremental_strategy": "merge", "+unique_key": "id"},
        }


class TestSnapshotCheckCols(BaseSnapshotCheckCols):
    pass


class PositiveNumber:
    """Matches any number above zero (the catalog holds a table's bytes and rows as ints)."""

    def __eq__(self, other) -> bool:
        return isinstance(other, int | float) and not isinstance(other, bool) and other > 0

    def __repr__(self) -> str:
        return "PositiveNumber()"


def table_stats(*names: str) -> dict:
    """The catalog stats of a table whose `show table extended` says `<n> bytes, <n> rows`."""
    stats = {
        name: {
            "id": name,
            "label": name,
            "value": PositiveNumber(),
            "include": True,
            "description": None,
        }
        for name in names
    }
    stats["has_stats"] = {**no_stats()["has_stats"], "value": True}
    return stats


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class", autouse=True)
    def leftover_temporary_view(self, spark):
        # what an incremental run earlier in the same process leaves in the session: Spark
        # lists it in every schema, without one (the catalog must skip it)
        spark.sql("create or replace temporary view leftover__dbt_tmp as select 1 as id")
        yield
        spark.sql("drop view if exists leftover__dbt_tmp")

    @pytest.fixture(scope="class")
    def expected_catalog(self, project):
        # dbt-spark's own expected catalog (tests/functional/adapter/test_basic.py)
        return base_expected_catalog(
            project,
            role="root",
            id_type="long",
            text_type="string",
            time_type="timestamp",
            view_type="view",
            table_type="table",
            model_stats=no_stats(),
            seed_stats=table_stats("bytes", "rows"),
        )


class TestSnapshotTimestamp(BaseSnapshotTimestamp):
    pass


# -- incremental ------------------------------------------------------------------------------


# dbt's inserts put string literals into the seed's date column; Spark's ANSI store assignment
# refuses that (CANNOT_SAFELY_CAST), so the same rows are inserted as date literals.
UNIQUE_KEY_DUPLICATE_INSERT_SQL = """
insert into {schema}.seed (state, county, city, last_visit_date)
values ('CT', 'Hartford', 'Hartford', date '2022-02-14');
"""

UNIQUE_KEY_ADD_NEW_ROWS_SQL = """
insert into {schema}.seed (state, county, city, last_visit_date)
values ('WA', 'King', 'Seattle', date '2022-02-01');

insert into {schema}.seed (state, county, city, last_visit_date)
values ('CA', 'Los Angeles', 'Los Angeles', date '2022-02-01');
"""


class TestIncrementalUniqueKey(BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_strategy": "merge"}}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {
            "duplicate_insert.sql": UNIQUE_KEY_DUPLICATE_INSERT_SQL,
            "seed.csv": unique_key_seed_csv,
            "add_new_rows.sql": UNIQUE_KEY_ADD_NEW_ROWS_SQL,
        }


class TestIncrementalPredicates(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        # merge instead of dbt's delete+insert (dbt-spark has none); the predicate names the
        # merge target's alias
        return {
            "models": {
                "+incremental_predicates": ["DBT_INTERNAL_DEST.id != 2"],
                "+incremental_strategy": "merge",
            }
        }


class TestIncrementalOnSchemaChange(BaseIncrementalOnSchemaChange):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_strategy": "merge", "+unique_key": "id"}}


class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    pass


class TestMicrobatch(BaseMicrobatch):
    @pytest.fixture(scope="class")
    def microbatch_model_sql(self) -> str:
        # dbt-spark's microbatch overwrites partitions: it needs partition_by
        return (
            "{{ config(materialized='incremental', incremental_strategy='microbatch', "
            "event_time='event_time', batch_size='day', "
            "begin=modules.datetime.datetime(2020, 1, 1, 0, 0, 0), partition_by=['date_day']) }}\n"
            "select *, cast(event_time as date) as date_day from {{ ref('input_model') }}"
        )


# -- snapshots --------------------------------------------------------------------------------


class IcebergFact:
    """dbt's snapshot classes rebuild their `fact` source with a bare `create table ... as`,
    which on this catalog is a Hive table: UPDATE and DELETE on it fail, and a Hive table
    re-created where a dropped one left its files fails with LOCATION_ALREADY_EXISTS. Here
    `fact` is an Iceberg table, dropped with its files."""

    def create_fact_from_seed(self, where: str | None = None):
        fact = relation_from_name(self.project.adapter, "fact")
        seed = relation_from_name(self.project.adapter, "seed")
        self.project.run_sql(f"drop table if exists {fact} purge")
        self.project.run_sql(
            f"create table {fact} using iceberg as select * from {seed} where {where or '1 = 1'}"
        )

    def add_fact_column(self, column: str | None = None, definition: str | None = None):
        # dbt passes `varchar(200) default null`: Iceberg takes no column defaults on
        # Spark 3.5, and a new column is null anyway
        super().add_fact_column(column, "string")


class TestSimpleSnapshot(IcebergFact, BaseSimpleSnapshot):
    pass


class TestSnapshotCheck(IcebergFact, BaseSnapshotCheck):
    pass


# -- snapshot hard deletes (hard_deletes: new_record) -----------------------------------------
# dbt's fixtures are Postgres SQL (`{database}.{schema}`, `::` casts, `timestamp without time
# zone`, string literals into timestamp columns). These are dbt-spark's own Spark translations
# (dbt-spark tests/functional/adapter/test_snapshot_hard_deletes.py) with `using iceberg`
# instead of Delta: the classes update and delete rows of the tables they create.

NEW_RECORD_COLUMNS = "id, first_name, last_name, email, gender, ip_address, updated_at"
NEW_RECORD_EXPECTED_COLUMNS = (
    f"{NEW_RECORD_COLUMNS}, dbt_valid_from, dbt_valid_to, dbt_updated_at, dbt_scd_id, "
    "dbt_is_deleted"
)
NEW_RECORD_SNAPSHOT_ROW = """
    updated_at as dbt_valid_from,
    cast(null as timestamp) as dbt_valid_to,
    updated_at as dbt_updated_at,
    md5(cast(id as string) || '-' || first_name || '|' || cast(updated_at as string)) as dbt_scd_id,
    'False' as dbt_is_deleted"""


def spark_timestamps(sql: str) -> str:
    """dbt's Postgres inserts give timestamps as string literals; Spark wants typed ones."""
    return re.sub(r"'(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)'", r"timestamp '\1'", sql)


# dbt's 20 seed rows, as Spark SQL
NEW_RECORD_SEED_INSERT = spark_timestamps(
    dbt_new_record_statements[2].replace("{database}.", "").rstrip().rstrip(";")
)

NEW_RECORD_TABLE_COLUMNS = """
    id int, first_name string, last_name string, email string, gender string,
    ip_address string, updated_at timestamp"""

NEW_RECORD_SEED_STATEMENTS = [
    f"create table {{schema}}.seed ({NEW_RECORD_TABLE_COLUMNS}) using iceberg",
    f"""create table {{schema}}.snapshot_expected ({NEW_RECORD_TABLE_COLUMNS},
    dbt_valid_from timestamp, dbt_valid_to timestamp, dbt_scd_id string,
    dbt_updated_at timestamp, dbt_is_deleted string) using iceberg""",
    NEW_RECORD_SEED_INSERT,
    f"""insert into {{schema}}.snapshot_expected ({NEW_RECORD_EXPECTED_COLUMNS})
select {NEW_RECORD_COLUMNS},{NEW_RECORD_SNAPSHOT_ROW}
from {{schema}}.seed""",
]

NEW_RECORD_INVALIDATE_STATEMENTS = [
    """update {schema}.seed set
    updated_at = updated_at + interval 1 hour,
    email = case when id = 20 then 'pfoxj@creativecommons.org' else concat('new_', email) end
where id >= 10 and id <= 20""",
    """update {schema}.snapshot_expected set dbt_valid_to = updated_at + interval 1 hour
where id >= 10 and id <= 20""",
]

NEW_RECORD_UPDATE_SQL = f"""
insert into {{schema}}.snapshot_expected ({NEW_RECORD_EXPECTED_COLUMNS})
select {NEW_RECORD_COLUMNS},{NEW_RECORD_SNAPSHOT_ROW}
from {{schema}}.seed
where id >= 10 and id <= 20
"""

NEW_RECORD_DELETE_SQL = "delete from {schema}.seed where id = 1"

NEW_RECORD_REINSERT_SQL = f"""
insert into {{schema}}.seed ({NEW_RECORD_COLUMNS}) values
(1, 'Judith', 'Kennedy', '(not provided)', 'Female', '54.60.24.128',
 timestamp '2200-01-01 12:00:00')
"""

# dbt's snapshot selects from `{{target.database}}.{{target.schema}}.seed`; Spark has no database
NEW_RECORD_SNAPSHOT_SQL = """
{% snapshot snapshot_actual %}
    {{ config(unique_key='id || ' ~ "'-'" ~ ' || first_name') }}
    select * from {{ target.schema }}.seed
{% endsnapshot %}
"""

NEW_RECORD_SNAPSHOTS_YML = """
snapshots:
  - name: snapshot_actual
    config:
      strategy: timestamp
      updated_at: updated_at
      hard_deletes: new_record
"""


class TestSnapshotNewRecordTimestampMode(BaseSnapshotNewRecordTimestampMode):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": NEW_RECORD_SNAPSHOT_SQL}

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "snapshots.yml": NEW_RECORD_SNAPSHOTS_YML,
            "ref_snapshot.sql": "select * from {{ ref('snapshot_actual') }}",
        }

    @pytest.fixture(scope="class")
    def seed_new_record_mode_statements(self):
        return NEW_RECORD_SEED_STATEMENTS

    @pytest.fixture(scope="class")
    def invalidate_sql_statements(self):
        return NEW_RECORD_INVALIDATE_STATEMENTS

    @pytest.fixture(scope="class")
    def update_sql(self):
        return NEW_RECORD_UPDATE_SQL

    @pytest.fixture(scope="class")
    def delete_sql(self):
        return NEW_RECORD_DELETE_SQL

    @pytest.fixture(scope="class")
    def reinsert_sql(self):
        return NEW_RECORD_REINSERT_SQL


class TestSnapshotNewRecordDbtValidToCurrent(BaseSnapshotNewRecordDbtValidToCurrent):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {
            "snapshot.sql": "{% snapshot snapshot_actual %}\n"
            "select * from {{ target.schema }}.seed\n{% endsnapshot %}"
        }

    @pytest.fixture(scope="class")
    def seed_new_record_mode_statements(self):
        return [
            "create table {schema}.seed (id int, first_name string) using iceberg",
            "insert into {schema}.seed (id, first_name) values (1, 'Judith'), (2, 'Arthur')",
        ]

    @pytest.fixture(scope="class")
    def delete_sql(self):
        return NEW_RECORD_DELETE_SQL


class TestSnapshotEphemeralHardDeletes(BaseSnapshotEphemeralHardDeletes):
    @pytest.fixture(scope="class")
    def source_create_sql(self):
        return """create table {schema}.src_customers (
    id int, first_name string, last_name string, email string, updated_at timestamp
) using iceberg"""

    @pytest.fixture(scope="class")
    def source_insert_sql(self):
        return """insert into {schema}.src_customers values
(1, 'John', 'Doe', 'john.doe@example.com', timestamp '2023-01-01 10:00:00'),
(2, 'Jane', 'Smith', 'jane.smith@example.com', timestamp '2023-01-02 11:00:00'),
(3, 'Bob', 'Johnson', 'bob.johnson@example.com', timestamp '2023-01-03 12:00:00')"""

    @pytest.fixture(scope="class")
    def source_alter_sql(self):
        # Iceberg takes no column default on Spark 3.5: the new column is added empty
        return "alter table {schema}.src_customers add column dummy_column string"
