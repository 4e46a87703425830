"""The same project on a Spark standalone cluster: start metastore, master, worker and Thrift
server on loopback, `dbt build --target cluster` of every layer, prove executors on the worker
did the work, compare every table with the same build on the local target (identical rows),
maintain and time-travel through the Thrift server, then stop the cluster and prove no process
and no port is left.

Both builds read the landing folder of this test run (test_warehouse's three batches; landed
here when run alone) in one go. The cluster build runs as a user runs it, `lakehouse dbt
--target cluster build` in its own process (a Thrift client: no JVM there); the local build is
the same project on this test run's session, under its own schemas (var schema_prefix): the
process boundary is not what it proves, and a JVM of its own cost a minute."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import takewhile
from pathlib import Path

import pytest
from scratch_project import write_scratch_project
from test_warehouse import SCALE, TABLES, land

from scripts.cluster import (
    alive_workers,
    cluster_processes,
    master_state,
    port_open,
    start,
    status,
    stop,
    thrift_executors,
    thrift_query,
)
from scripts.spark_config import (
    PROJECT_DIR,
    ClusterSettings,
    pyiceberg_catalog_properties,
    remote_catalog_conf,
)

LOCAL_PREFIX = "clusterref_"  # the local build's schemas (var schema_prefix)
# Stamped at load time, so they differ between any two builds: the loads' clock, and the
# clock a check-strategy `dbt snapshot` stamps its versions with (and hashes into its id).
LOAD_TIME_COLUMNS = {"_loaded_at", "_max_loaded_at", "_listed_at"} | {
    "dbt_scd_id",
    "dbt_updated_at",
    "dbt_valid_from",
    "dbt_valid_to",
}


@dataclass
class Build:
    returncode: int
    seconds: float
    output: str


def free_ports(count: int) -> list[int]:
    """Ports the kernel just handed out on loopback: not the defaults a developer may use."""
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sockets.append(sock)
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def listening_addresses(port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Addresses with a socket listening on `port`, from the kernel's tables (no `ss` needed)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] != "0A" or int(hex_port, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)  # 32-bit words in host (little-endian) order
            found.append(
                ipaddress.ip_address(b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4)))
            )
    return found


def is_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def on_cluster(cluster: ClusterSettings, landing: Path, *args: str) -> Build:
    """`lakehouse dbt --target cluster ...` as a user runs it, in its own process (a Thrift
    client: no JVM there). Its dbt target/ and logs/ go under the cluster's folder."""
    env = {
        **os.environ,
        **cluster.to_env(),
        "LAKEHOUSE_LANDING_DIR": str(landing),
        "DBT_TARGET_PATH": str(cluster.root / "target"),  # leave the checkout's target/ alone
        "DBT_LOG_PATH": str(cluster.root / "logs"),
    }
    command = [sys.executable, "-m", "scripts.tasks", "dbt", "--target", "cluster", *args]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=900
    )
    return Build(done.returncode, time.monotonic() - started, done.stdout + done.stderr)


def comparable(frame):
    """The rows without load-time values, as a DataFrame."""
    columns = [c for c in frame.columns if c not in LOAD_TIME_COLUMNS]
    return frame.select(*columns)


def digest(columns: list[str]) -> list[str]:
    """Row count and an order-independent content hash, as select expressions."""
    return ["count(*)", f"coalesce(sum(hash({', '.join(columns)})), 0)"]


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def landing(data_dir) -> Path:
    """This run's landing folder: test_warehouse's batches, or the same ones landed here."""
    land(data_dir, SCALE.batches)  # leaves batches already landed untouched
    return data_dir / "landing"


@pytest.fixture(scope="module")
def local_build(dbt, landing) -> None:
    """A full build on the local target from the same landing folder, in this session under
    LOCAL_PREFIX (before the cluster starts: the two never compete for memory)."""
    started = time.monotonic()
    dbt(["build", "--vars", json.dumps({"schema_prefix": LOCAL_PREFIX})], landing=landing)
    print(f"dbt build on the local target: {time.monotonic() - started:.1f} s wall")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, local_build) -> Iterator[ClusterSettings]:
    """A cluster of this test run only: its own folder, metastore and free loopback ports."""
    names = ["metastore", "master", "master_webui", "worker", "worker_webui", "thrift", "thrift_ui"]
    ports = dict(zip([f"{n}_port" for n in names], free_ports(len(names)), strict=True))
    settings = replace(ClusterSettings.from_env(), root=tmp_path_factory.mktemp("cluster"), **ports)
    start(settings, log=print)
    try:
        yield settings
    finally:
        stop(settings, log=print)
        assert cluster_processes(settings) == [], "a process of the cluster outlived stop"


@pytest.fixture(scope="module")
def cluster_build(cluster, landing) -> Build:
    """One `dbt build --target cluster` of every layer from the same landing folder."""
    build = on_cluster(cluster, landing, "build")
    print(f"dbt build --target cluster: {build.seconds:.1f} s wall")
    assert build.returncode == 0, build.output[-4000:]
    return build


@pytest.fixture(scope="module")
def local(spark, local_build):
    """name -> the local build's table as a DataFrame of this session."""
    return lambda name: spark.table(f"{LOCAL_PREFIX}{name}")


@pytest.fixture(scope="module")
def remote(spark, cluster) -> str:
    """The cluster's catalog, registered in pytest's own session as catalog `cluster`."""
    for key, value in remote_catalog_conf("cluster", cluster).items():
        spark.conf.set(key, value)
    return "cluster"


# -- tests -------------------------------------------------------------------------------------


def test_every_component_binds_loopback_and_reports_ready(cluster):
    health = {h.component: h for h in status(cluster)}
    assert all(h.ok for h in health.values()), health
    workers = alive_workers(cluster)
    assert len(workers) == 1 and workers[0]["host"] == "127.0.0.1"
    for port in cluster.ports().values():
        bound = listening_addresses(port)
        assert bound and all(is_loopback(address) for address in bound), (port, bound)


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


def test_every_table_is_identical_to_the_local_target(spark, local, remote, cluster_build):
    for name in TABLES:
        here, there = comparable(local(name)), comparable(spark.table(f"{remote}.{name}"))
        assert here.columns == there.columns, name
        rows = here.count()
        assert rows > 0 and there.count() == rows, (name, rows, there.count())
        assert here.exceptAll(there).count() == 0, f"{name}: rows only in the local target"
        assert there.exceptAll(here).count() == 0, f"{name}: rows only on the cluster"


def test_every_connection_wrote_on_the_runs_branch(cluster, cluster_build):
    """On a Thrift server each dbt connection is a Spark session of its own: the build is
    write-audit-publish (no --select), so every model's connection must have been pointed at
    the run's branch. A connection without it would have written main directly: that table
    would have no branch to publish and no run tag."""
    load_id = int(cluster_build.output.split("writes on branch wap_")[1].split(";")[0])
    assert f"run {load_id} published" in cluster_build.output
    for name in TABLES:
        refs = dict(thrift_query(cluster, f"select name, snapshot_id from {name}.refs"))
        assert refs.get("main") is not None and refs.get(f"run_{load_id}") == refs["main"], (
            name,
            refs,
        )
        assert not [ref for ref in refs if ref.startswith("wap_")], (name, refs)


def test_pyiceberg_sees_the_same_catalog(local, cluster, cluster_build):
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog("cluster", **pyiceberg_catalog_properties(cluster))
    assert {("ods",), ("dwd",), ("dws",)} <= set(catalog.list_namespaces())
    users = catalog.load_table("dwd.dim_users__state")  # merge-on-read: reads position deletes
    assert users.scan().to_arrow().num_rows == local("dwd.dim_users__state").count()


def test_maintenance_through_the_cluster(cluster, cluster_build, landing):
    """The nightly operation compacts a table of the cluster's catalog through the Thrift
    server. ODS is written once per load (one file), so the table is made here: three
    inserts, three small files."""
    name = "dws.maintenance_probe"
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
    run = on_cluster(cluster, landing, *args)
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
    columns = [c for c in local(name).columns if c not in LOAD_TIME_COLUMNS]
    expected_before = tuple(local(name).selectExpr(*digest(columns)).first())
    expected_after = tuple(
        local(name).where("user_id % 5 != 0").selectExpr(*digest(columns)).first()
    )
    assert expected_before[0] > expected_after[0] > 0
    before = thrift_query(
        cluster, f"select snapshot_id from {name}.snapshots order by committed_at desc limit 1"
    )[0][0]
    thrift_query(cluster, f"delete from {name} where user_id % 5 = 0")
    select = f"select {', '.join(digest(columns))} from {name}"
    assert tuple(thrift_query(cluster, select)[0]) == expected_after
    assert tuple(thrift_query(cluster, f"{select} version as of {before}")[0]) == expected_before
    latest = thrift_query(
        cluster,
        f"select snapshot_id, operation from {name}.snapshots order by committed_at desc limit 1",
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


def test_dbt_features_fixed_on_iceberg_work_through_the_cluster(cluster, cluster_build, tmp_path):
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
            cluster, tmp_path, "build", "--project-dir", str(project), "--vars", variables
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
