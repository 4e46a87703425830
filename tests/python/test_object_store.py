"""The `s3` target's services and catalog: SeaweedFS (S3 API + Iceberg REST catalog) started
by `lakehouse-services` on free loopback ports with keys of this test run, the S3A jars
fetched and verified, and a Spark process of the `s3` target whose Iceberg tables land in the
bucket and the REST catalog (pyiceberg reads them there) while its views and landing tables
stay in Spark's built-in catalog.

One set of services for the file; the Spark side runs in a process of its own (pytest's
session is the `ci` target's)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys

import pytest
from test_cluster import is_loopback, listening_addresses

from scripts import services
from scripts.object_store import ServiceError, ServiceSettings
from scripts.s3a_jars import JARS, JarsMissing, cached_jars, fetch
from scripts.spark_config import PROJECT_DIR

PORT_FIELDS = ("s3_port", "catalog_port", "master_port", "volume_port", "filer_port", "admin_port")


def free_port_with_grpc_twin(taken: set[int], offset: int) -> int:
    """A loopback port free together with port + offset (SeaweedFS's gRPC twin)."""
    for port in range(21000, 29000, 7):
        if port in taken or port + offset in taken:
            continue
        if all(_free(p) for p in (port, port + offset)):
            taken.update((port, port + offset))
            return port
    raise RuntimeError("no free port pair")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    """Running services, and the environment a process of the `s3` target needs."""
    data = tmp_path_factory.mktemp("s3target")
    taken: set[int] = set()
    env = {
        "LAKEHOUSE_DATA_DIR": str(data),
        "AWS_ACCESS_KEY_ID": "lakehouse-test",
        "AWS_SECRET_ACCESS_KEY": secrets.token_hex(16),  # this run's only
    }
    for field in PORT_FIELDS:
        env[f"LAKEHOUSE_{field.upper()}"] = str(free_port_with_grpc_twin(taken, 10000))
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    settings = ServiceSettings.from_env(data)
    try:
        services.start(settings, log=print)
        yield settings, env, data
    finally:
        services.stop(settings, log=print)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def test_every_port_binds_loopback_and_status_reports_ready(store):
    settings, _, _ = store
    checks = services.status(settings)
    assert checks and all(ok for _, ok, _ in checks), checks
    for name, port in settings.ports().items():
        addresses = listening_addresses(port)
        assert addresses and all(map(is_loopback, addresses)), (name, port, addresses)
    assert set(services.buckets(settings)) >= {"lakehouse", "lakehouse-landing"}


def test_a_wrong_key_is_refused_naming_the_fix(store, monkeypatch):
    settings, _, _ = store
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(ServiceError, match="refused AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY"):
        services.buckets(settings)


def test_missing_keys_stop_the_start_naming_them(store, monkeypatch):
    settings, _, _ = store
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ServiceError, match="AWS_SECRET_ACCESS_KEY are not set"):
        services.start(settings)


SPARK_SIDE = """
import json
from scripts.session import get_spark
spark = get_spark("s3")
spark.sql("create schema if not exists dwd")
spark.sql("create table dwd.facts (id bigint, day date) using iceberg partitioned by (day)")
spark.sql("insert into dwd.facts values (1, date'2026-01-01'), (2, date'2026-01-02')")
spark.sql("create or replace view dwd.facts_view as select id * 10 as x from dwd.facts")
spark.sql("alter table dwd.facts create branch audit")
print("RESULT", json.dumps({
    "files": [r[0] for r in spark.sql("select file_path from dwd.facts.files").collect()],
    "view": sorted(r[0] for r in spark.sql("select x from dwd.facts_view").collect()),
    "listed": sorted(r[1] for r in spark.sql("show tables in dwd").collect()),
    "refs": sorted(r[0] for r in spark.sql("select name from dwd.facts.refs").collect()),
}))
"""

SECOND_PROCESS = """
import json
from scripts.session import get_spark
spark = get_spark("s3")
print("RESULT", json.dumps({
    "view": sorted(r[0] for r in spark.sql("select x from dwd.facts_view").collect()),
    "rows": spark.table("dwd.facts").count(),
}))
"""


def run_s3_process(env: dict[str, str], script: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_DIR,
        env={**os.environ, **env, "LAKEHOUSE_DRIVER_MEMORY": "1g"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


@pytest.fixture(scope="module")
def spark_side(store) -> dict:
    _, env, _ = store
    return run_s3_process(env, SPARK_SIDE)


def test_iceberg_tables_live_in_the_bucket_and_views_in_the_built_in_catalog(store, spark_side):
    _, _, data = store
    assert spark_side["files"] and all(
        f.startswith("s3://lakehouse/dwd/facts/data/") for f in spark_side["files"]
    )
    assert spark_side["view"] == [10, 20]
    assert spark_side["listed"] == ["facts", "facts_view"]  # the service's table, the view
    assert spark_side["refs"] == ["audit", "main"]
    # nothing of Iceberg's under the local data folder: its metastore holds the view only
    assert not list(data.rglob("*.metadata.json")) and not list(data.rglob("*.parquet"))
    # another process sees both: the table through the service, the view through the metastore
    assert run_s3_process(store[1], SECOND_PROCESS) == {"view": [10, 20], "rows": 2}


def test_pyiceberg_reads_the_table_through_the_rest_catalog(store, spark_side):
    from pyiceberg.catalog import load_catalog

    settings, env, _ = store
    catalog = load_catalog(
        "rest",
        type="rest",
        uri=settings.catalog_uri,
        warehouse=settings.warehouse,
        credential=f"{env['AWS_ACCESS_KEY_ID']}:{env['AWS_SECRET_ACCESS_KEY']}",
        **{
            "oauth2-server-uri": f"{settings.catalog_uri}/v1/oauth/tokens",
            "s3.endpoint": settings.s3_endpoint,
            "s3.access-key-id": env["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": env["AWS_SECRET_ACCESS_KEY"],
            "s3.region": "us-east-1",
        },
    )
    table = catalog.load_table("dwd.facts")
    assert table.metadata_location.startswith("s3://lakehouse/dwd/facts/metadata/")
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2]


def test_the_jars_are_verified_and_a_fetch_that_fails_says_what_to_do(store, tmp_path, monkeypatch):
    _, _, data = store
    jars = cached_jars(data / "jars")  # fetched for the Spark process
    assert jars and [jar.name for jar in jars] == list(JARS)
    # a jar cut short is no longer the verified one
    copy = tmp_path / "jars"
    copy.mkdir()
    for jar in jars:
        (copy / jar.name).symlink_to(jar)
    (copy / ".verified").write_text((data / "jars" / ".verified").read_text().replace(" ", " 1"))
    assert cached_jars(copy) is None
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # no registry
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    with pytest.raises(JarsMissing, match=r"could not download sagemaker-pyspark==1\.4\.5"):
        fetch(tmp_path / "elsewhere", log=lambda _: None)


def test_stop_leaves_no_process_and_no_port(store):
    settings, _, _ = store
    services.stop(settings, log=lambda _: None)
    assert not any(ok for name, ok, _ in services.status(settings) if name != "ready")
    assert not [p for p in settings.ports().values() if listening_addresses(p)]
    services.start(settings, log=lambda _: None)  # the fixture's teardown stops it again
