"""The same project on a Spark standalone cluster whose storage is the `s3` target's: start
master, worker and Thrift server on loopback (`lakehouse-cluster start`, as a user runs it),
`dbt build --target cluster` of every layer from the landing bucket, prove executors on the
worker did the work and every table is in the REST catalog and the bucket, compare every table
with the same build on the local target (identical rows), maintain and time-travel through
the Thrift server, then stop the cluster and prove no process and no port is left.

The services are the test run's one set (the `store` fixture), test_object_store.py's too: the
cluster's schemas carry their own prefix (var schema_prefix) beside that file's. Both builds
read one landing folder (test_warehouse's three batches, landed here), copied as it is
into the landing bucket for the cluster. The cluster build runs in its
own process, a Thrift client (no JVM there); the local build is the same project on this test
run's session, under its own schemas: the process boundary is not what it proves, and a JVM of
its own cost a minute."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import takewhile
from pathlib import Path

import pytest
from loopback import free_ports, is_loopback, listening_addresses
from object_store_services import process_env, rest_catalog
from scratch_project import write_scratch_project
from test_warehouse import SCALE, TABLES, land

from dbt.adapters.lakehouse.object_store import s3_filesystem
from scripts.cluster import (
    alive_workers,
    cluster_processes,
    master_state,
    port_open,
    status,
    stop,
    thrift_executors,
    thrift_query,
)
from scripts.spark_config import PROJECT_DIR, ClusterSettings

LOCAL_PREFIX = "clusterref_"  # the local build's schemas (var schema_prefix)
PREFIX = "cluster_"  # the cluster build's, in the REST catalog the s3 target's tests share
# Stamped at load time, so they differ between any two builds: the loads' clock, and the
# clock a check-strategy `dbt snapshot` stamps its versions with (and hashes into its id).
LOAD_TIME_COLUMNS = {"_loaded_at", "_max_loaded_at", "_listed_at"} | {
    "dbt_scd_id",
    "dbt_updated_at",
    "dbt_valid_from",
    "dbt_valid_to",
}
# Where a landed file is and when it was written: a local path against an s3a:// key, and
# the upload's time against the file's
FILE_COLUMNS = {"_source_file", "_file_modified_at"}


@dataclass
class Build:
    returncode: int
    seconds: float
    output: str


def on_cluster(cluster: ClusterSettings, env: dict[str, str], *args: str) -> Build:
    """`lakehouse dbt --target cluster ...` as a user runs it, in its own process (a Thrift
    client: no JVM there). Its dbt target/ and logs/ go under the cluster's folder, and its
    OpenLineage events to the file `lineage_events(cluster)`."""
    lineage_config = cluster.root / "openlineage.yml"
    lineage_config.write_text(
        f"transport:\n  type: file\n  log_file_path: {lineage_events(cluster)}\n  append: true\n"
    )
    environment = {
        "OPENLINEAGE_CONFIG": str(lineage_config),
        **process_env(env),
        **cluster.to_env(),
        "DBT_TARGET_PATH": str(cluster.root / "target"),  # leave the checkout's target/ alone
        "DBT_LOG_PATH": str(cluster.root / "logs"),
    }
    command = [sys.executable, "-m", "scripts.tasks", "dbt", "--target", "cluster", *args]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=PROJECT_DIR, env=environment, capture_output=True, text=True, timeout=900
    )
    return Build(done.returncode, time.monotonic() - started, done.stdout + done.stderr)


def lineage_events(cluster: ClusterSettings) -> Path:
    return cluster.root / "lineage-events.jsonl"


def compared_columns(frame) -> list[str]:
    """The columns two builds of the same landed files must agree on."""
    return [c for c in frame.columns if c not in LOAD_TIME_COLUMNS | FILE_COLUMNS]


def digest(columns: list[str]) -> list[str]:
    """Row count and an order-independent content hash, as select expressions (Spark's
    `hash` on both sides: the same function on the same types gives the same value)."""
    return ["count(*)", f"coalesce(sum(hash({', '.join(columns)})), 0)"]


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def landing(tmp_path_factory) -> Path:
    """test_warehouse's three batches (its scale and seed), landed in a folder of their own."""
    folder = tmp_path_factory.mktemp("cluster_data")
    land(folder, SCALE.batches)
    return folder / "landing"


@pytest.fixture(scope="module")
def cluster_env(store, landing) -> dict[str, str]:
    """The environment of the cluster's processes: the services' keys and ports, and the
    landing folder copied into the landing bucket under a folder of its own."""
    from pyarrow import fs

    settings, env, _ = store
    folder = f"{settings.landing_bucket}/cluster-landing"
    fs.copy_files(
        str(landing), folder, fs.LocalFileSystem(), s3_filesystem(settings), use_threads=False
    )
    return {**env, "LAKEHOUSE_LANDING_DIR": f"s3a://{folder}"}


@pytest.fixture(scope="module")
def local_build(dbt, landing) -> None:
    """A full build on the local target from the same landing folder, in this session under
    LOCAL_PREFIX (before the cluster starts: the two never compete for memory). Its tables
    only: the cluster build runs the data tests on the same rows, and the tests here compare
    tables. Written on a branch and published, as the cluster build (--exclude would turn
    write-audit-publish off)."""
    started = time.monotonic()
    variables = json.dumps({"schema_prefix": LOCAL_PREFIX, "write_audit_publish": True})
    dbt(["build", "--exclude", "resource_type:test", "--vars", variables], landing=landing)
    print(f"dbt build on the local target: {time.monotonic() - started:.1f} s wall")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, cluster_env, local_build) -> Iterator[ClusterSettings]:
    """A cluster of this test run only, started by `lakehouse-cluster start` in the services'
    environment: its own folder and free loopback ports."""
    names = ["master", "master_webui", "worker", "worker_webui", "thrift", "thrift_ui"]
    ports = dict(zip([f"{n}_port" for n in names], free_ports(len(names)), strict=True))
    settings = replace(ClusterSettings.from_env(), root=tmp_path_factory.mktemp("cluster"), **ports)
    environment = {**process_env(cluster_env), **settings.to_env()}
    command = [sys.executable, "-m", "scripts.cluster", "start"]
    try:
        started = subprocess.run(
            command, cwd=PROJECT_DIR, env=environment, capture_output=True, text=True, timeout=600
        )
        print(started.stdout)
        assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
        yield settings
    finally:
        stop(settings, log=print)
        assert cluster_processes(settings) == [], "a process of the cluster outlived stop"


@pytest.fixture(scope="module")
def cluster_build(cluster, cluster_env) -> Build:
    """One `dbt build --target cluster` of every layer from the landing bucket."""
    variables = json.dumps({"schema_prefix": PREFIX})
    build = on_cluster(cluster, cluster_env, "build", "--vars", variables)
    print(f"dbt build --target cluster: {build.seconds:.1f} s wall")
    assert build.returncode == 0, build.output[-4000:]
    return build


@pytest.fixture(scope="module")
def local(spark, local_build):
    """name -> the local build's table as a DataFrame of this session."""
    return lambda name: spark.table(f"{LOCAL_PREFIX}{name}")


# -- tests -------------------------------------------------------------------------------------


def test_every_component_binds_loopback_and_reports_ready(cluster):
    health = {h.component: h for h in status(cluster)}
    assert all(h.ok for h in health.values()), health
    workers = alive_workers(cluster)
    assert len(workers) == 1 and workers[0]["host"] == "127.0.0.1"
    for port in cluster.ports().values():
        bound = listening_addresses(port)
        assert bound and all(is_loopback(address) for address in bound), (port, bound)


def test_no_process_shows_the_secret_key_and_no_file_keeps_it(store, cluster):
    """The Thrift server's settings carry the REST catalog's credential: they reach it in a
    file only its owner reads, removed once it started, never on a command line."""
    _, env, _ = store
    secret = env["AWS_SECRET_ACCESS_KEY"]
    processes = cluster_processes(cluster)
    assert len(processes) >= 3  # master, worker, Thrift server (and the executor)
    for pid, _ in processes:
        assert secret not in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"), pid
    leftovers = [p for p in cluster.root.rglob("*") if p.is_file() and secret in _text(p)]
    assert leftovers == []


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def test_build_of_every_layer_ran_on_the_workers_executors(cluster, cluster_build):
    assert "Completed successfully" in cluster_build.output
    assert "ERROR=0" in cluster_build.output
    executors = [e for e in thrift_executors(cluster) if e["id"] != "driver"]
    assert executors, "the Thrift server's application has no executor"
    assert sum(e["completedTasks"] for e in executors) > 0
    assert all(e["hostPort"].startswith("127.0.0.1:") for e in executors)
    apps = master_state(cluster)["activeapps"]
    assert [a["name"] for a in apps] == ["lakehouse-thrift-server"]
    # the worker's own record of the executor it launched for that application
    work = cluster.run / "work" / apps[0]["id"]
    assert any(work.glob("*/stderr")), f"no executor folder under {work}"


def test_every_table_is_identical_to_the_local_target(spark, local, cluster, cluster_build):
    for name in TABLES:
        described = thrift_query(cluster, f"describe table {PREFIX}{name}")
        # the columns, then "# Partition Information" (a blank line before it on some tables)
        there = [row[0] for row in takewhile(lambda row: row[0] and row[0][0] != "#", described)]
        assert there == local(name).columns, name
        columns = compared_columns(local(name))
        expected = tuple(local(name).selectExpr(*digest(columns)).first())
        select = f"select {', '.join(digest(columns))} from {PREFIX}{name}"
        assert expected[0] > 0 and tuple(thrift_query(cluster, select)[0]) == expected, name


def test_every_connection_wrote_on_the_runs_branch(cluster, cluster_build):
    """On a Thrift server each dbt connection is a Spark session of its own: the build is
    write-audit-publish (no --select), so every model's connection must have been pointed at
    the run's branch. A connection without it would have written main directly: that table
    would have no branch to publish and no run tag."""
    load_id = int(cluster_build.output.split("writes on branch wap_")[1].split(";")[0])
    assert f"run {load_id} published" in cluster_build.output
    for name in TABLES:
        refs = dict(thrift_query(cluster, f"select name, snapshot_id from {PREFIX}{name}.refs"))
        assert refs.get("main") is not None and refs.get(f"run_{load_id}") == refs["main"], (
            name,
            refs,
        )
        assert not [ref for ref in refs if ref.startswith("wap_")], (name, refs)


def test_every_table_is_in_the_rest_catalog_and_the_bucket(store, local, cluster_build):
    """pyiceberg through the REST catalog (no Spark) finds every table with its files in the
    warehouse bucket, and reads a merge-on-read table (its position deletes applied)."""
    settings, _, _ = store
    catalog = rest_catalog(store)
    for name in TABLES:
        table = catalog.load_table(f"{PREFIX}{name}")
        assert table.metadata_location.startswith(f"s3://{settings.warehouse_bucket}/"), name
    users = catalog.load_table(f"{PREFIX}dwd.dim_users__state")
    assert users.scan().to_arrow().num_rows == local("dwd.dim_users__state").count()


def test_the_build_sent_lineage_named_by_the_buckets_locations(store, cluster, cluster_build):
    """The on-run-end hook's OpenLineage events on the cluster target: a REST catalog's
    listing shows no table location, so each is described; the dataset names are the tables'
    locations in the warehouse bucket, as the REST catalog has them (s3a:// named s3://), and
    a dimension state's input is the ODS table it reads through its ephemeral typed model."""
    sent = [json.loads(line) for line in lineage_events(cluster).read_text().splitlines()]
    catalog = rest_catalog(store)

    def dataset(name: str) -> dict:
        location = catalog.load_table(f"{PREFIX}{name}").location()
        bucket, _, key = location.removeprefix("s3a://").removeprefix("s3://").partition("/")
        return {"namespace": f"s3://{bucket}", "name": key}

    runs = [e for e in sent if e["job"]["name"] == "model.lakehouse.dim_users__state"]
    assert [e["eventType"] for e in runs] == ["START", "COMPLETE"]
    named = [{k: d[k] for k in ("namespace", "name")} for d in runs[-1]["inputs"]]
    assert named == [dataset("ods.ods_appdb__user_changes")]
    (output,) = runs[-1]["outputs"]
    assert {k: output[k] for k in ("namespace", "name")} == dataset("dwd.dim_users__state")
    links = output["facets"]["symlinks"]["identifiers"]
    assert [link["name"] for link in links] == [f"{PREFIX}dwd.dim_users__state"]


def test_maintenance_through_the_cluster(cluster, cluster_build, cluster_env):
    """The nightly operation compacts a table of the cluster's catalog through the Thrift
    server. ODS is written once per load (one file), so the table is made here: three
    inserts, three small files."""
    name = f"{PREFIX}dws.maintenance_probe"
    thrift_query(cluster, f"drop table if exists {name}")
    thrift_query(cluster, f"create table {name} (id bigint, note string) using iceberg")
    for first in (0, 100, 200):  # range(..., 1, 1): one task, so one file per insert
        rows = f"range({first}, {first + 100}, 1, 1)"
        thrift_query(cluster, f"insert into {name} select id, 'n' || id from {rows}")
    select = f"select {', '.join(digest(['id', 'note']))} from {name}"
    before = thrift_query(cluster, select)
    assert thrift_query(cluster, f"select count(*) from {name}.data_files") == [(3,)]
    policy = {"table": name, "policy": {"rewrite_data_files": {"min_small_files": 2}}}
    args = ["run-operation", "iceberg_maintain_table", "--args", json.dumps(policy)]
    run = on_cluster(cluster, cluster_env, *args, "--vars", json.dumps({"schema_prefix": PREFIX}))
    assert run.returncode == 0, run.output[-3000:]
    assert f"maintenance {name}: data files 3 -> 1" in run.output, run.output[-3000:]
    assert thrift_query(cluster, f"select count(*) from {name}.data_files") == [(1,)]
    latest = thrift_query(
        cluster, f"select operation from {name}.snapshots order by committed_at desc limit 1"
    )
    assert latest == [("replace",)]
    assert thrift_query(cluster, select) == before and before[0][0] == 300
    thrift_query(cluster, f"drop table {name} purge")


def test_time_travel_through_the_cluster(local, cluster, cluster_build):
    """Delete through the cluster, then read the snapshot before it: it must hold exactly the
    local target's rows, and the current one exactly those minus the deleted ones."""
    name = "dwd.dim_users__state"
    columns = compared_columns(local(name))
    expected_before = tuple(local(name).selectExpr(*digest(columns)).first())
    expected_after = tuple(
        local(name).where("user_id % 5 != 0").selectExpr(*digest(columns)).first()
    )
    assert expected_before[0] > expected_after[0] > 0
    table = f"{PREFIX}{name}"
    before = thrift_query(
        cluster, f"select snapshot_id from {table}.snapshots order by committed_at desc limit 1"
    )[0][0]
    thrift_query(cluster, f"delete from {table} where user_id % 5 = 0")
    select = f"select {', '.join(digest(columns))} from {table}"
    assert tuple(thrift_query(cluster, select)[0]) == expected_after
    assert tuple(thrift_query(cluster, f"{select} version as of {before}")[0]) == expected_before
    latest = thrift_query(
        cluster,
        f"select snapshot_id, operation from {table}.snapshots order by committed_at desc limit 1",
    )[0]
    assert latest[0] != before and latest[1] in {"delete", "overwrite"}


# dbt features plain dbt-spark fails on Iceberg (docs/dbt-on-iceberg.md), through the Thrift
# server: a view whose SQL changed, an empty seed cell, sync_all_columns with a merge, a merge
# model that stops selecting a column, a new_record snapshot of a deleted row. Round 2 changes
# each.
FEATURES = {
    "features_view.sql": """
{{ config(schema='scratch_features', materialized='view') }}
select {{ var('round') }} as round
""",
    "features_synced.sql": """
{{ config(schema='scratch_features', unique_key='id', incremental_strategy='merge',
          on_schema_change='sync_all_columns') }}
{% if var('round') == 1 %}
select 1 as id, cast(10 as int) as amount, 'x' as dropped
{% else %}
select 1 as id, cast(20 as bigint) as amount, 'y' as added
union all select 2 as id, cast(30 as bigint) as amount, 'z' as added
{% endif %}
""",
    # append_new_columns keeps a column the model stops selecting: the merge must name its columns
    "features_appended.sql": """
{{ config(schema='scratch_features', unique_key='id', incremental_strategy='merge') }}
select {{ var('round') }} as id, 'note {{ var('round') }}' as note
{% if var('round') == 1 %}, 'only in round 1' as dropped_from_model{% endif %}
""",
    "features_source.sql": """
{{ config(schema='scratch_features', materialized='table') }}
select 1 as id, 'kept' as name
{% if var('round') == 1 %}union all select 2 as id, 'deleted later' as name{% endif %}
""",
}
FEATURES_SNAPSHOT = """
{% snapshot features_history %}
{{ config(schema='scratch_features', unique_key='id', strategy='check', check_cols=['name'],
          hard_deletes='new_record') }}
select * from {{ ref('features_source') }}
{% endsnapshot %}
"""


def test_dbt_features_fixed_on_iceberg_work_through_the_cluster(
    cluster, cluster_build, cluster_env, tmp_path
):
    project = write_scratch_project(tmp_path, FEATURES, {"features_history.sql": FEATURES_SNAPSHOT})
    (project / "seeds").mkdir()
    (project / "seeds/features_seed.csv").write_text("id,city\n1,Paris\n2,\n")
    seed_config = "{schema: scratch_features, file_format: iceberg}"
    (project / "seeds/_seeds.yml").write_text(
        f"seeds:\n  - name: features_seed\n    config: {seed_config}\n"
    )
    for round_ in (1, 2):
        variables = json.dumps({"round": round_})
        run = on_cluster(
            cluster, cluster_env, "build", "--project-dir", str(project), "--vars", variables
        )
        assert run.returncode == 0, run.output[-3000:]
    schema = "scratch_features"
    assert thrift_query(cluster, f"select round from {schema}.features_view") == [(2,)]
    seed = thrift_query(cluster, f"select id, city from {schema}.features_seed order by id")
    assert seed == [(1, "Paris"), (2, None)]
    described = thrift_query(cluster, f"describe table {schema}.features_synced")
    columns = [tuple(row[:2]) for row in takewhile(lambda row: row[0], described)]
    assert columns == [("id", "int"), ("amount", "bigint"), ("added", "string")]
    synced = thrift_query(cluster, f"select * from {schema}.features_synced order by id")
    assert synced == [(1, 20, "y"), (2, 30, "z")]
    appended = thrift_query(cluster, f"select * from {schema}.features_appended order by id")
    assert appended == [(1, "note 1", "only in round 1"), (2, "note 2", None)]
    deleted = thrift_query(
        cluster, f"select id, name from {schema}.features_history where dbt_is_deleted = 'True'"
    )
    assert deleted == [(2, "deleted later")]


def test_stop_leaves_no_process_and_no_port(cluster):
    stop(cluster, log=print)
    assert cluster_processes(cluster) == []
    assert not any(port_open(cluster.host, port) for port in cluster.ports().values())
    assert not any(h.ok for h in status(cluster) if h.component != "stragglers")
