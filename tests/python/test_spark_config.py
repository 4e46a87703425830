import os
import shutil
import sys
from pathlib import Path

import pytest

from dbt.adapters.lakehouse.connections import EmptyResultsPyhiveWrapper
from dbt.adapters.lakehouse.s3a_jars import JARS
from dbt.include.lakehouse import PACKAGE_PATH
from scripts.spark_config import (
    PROJECT_DIR,
    ClusterSettings,
    DataPaths,
    cluster_spark_conf,
    dbt_env,
    embedded_target,
    iceberg_catalog_conf,
    metastore_conf,
    remote_catalog_conf,
    spark_conf,
)
from scripts.spark_config import main as spark_config_main


def test_conf_points_at_a_real_iceberg_runtime_and_loopback(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    conf = spark_conf("ci")
    jars = [Path(jar) for jar in conf["spark.jars"].split(",")]
    assert [jar.name for jar in jars] == [
        "iceberg-spark-runtime-3.5_2.12-1.10.2.jar",
        "lakehouse-helpers.jar",  # compiled from dbt/include/lakehouse/java on first use
    ]
    assert all(jar.is_file() for jar in jars)
    assert conf["spark.sql.catalog.spark_catalog"] == "org.apache.iceberg.spark.SparkSessionCatalog"
    assert conf["spark.hadoop.iceberg.engine.hive.lock-enabled"] == "true"  # see session.py
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "warehouse")
    assert str(tmp_path / "metastore") in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]


def test_the_helper_jar_lives_beside_the_venv_and_a_changed_source_names_a_new_one(
    monkeypatch, tmp_path
):
    """Never in the adapter's package or the checkout's build/ (site-packages, when installed),
    and a changed source is compiled again, whatever its files' times (a wheel's are not)."""
    from dbt.adapters.lakehouse import jars

    iceberg = Path("iceberg-spark-runtime.jar")
    monkeypatch.delenv(jars.CACHE_DIR_ENV, raising=False)
    default = jars.helper_jar_path(iceberg)
    assert default.parent.parent == Path(sys.prefix) / "share" / "lakehouse", default
    assert Path(PACKAGE_PATH) not in default.parents

    monkeypatch.setenv(jars.CACHE_DIR_ENV, str(tmp_path / "cache"))
    sources = tmp_path / "java"
    shutil.copytree(jars.SOURCES, sources)
    monkeypatch.setattr(jars, "SOURCES", sources)
    before = jars.helper_jar_path(iceberg)
    assert before.parent.parent == tmp_path / "cache"
    assert jars.helper_jar_path(iceberg) == before  # the same sources: the same jar
    changed = sources / "lakehouse" / "RunLock.java"
    changed.write_text(changed.read_text() + "// changed\n")
    assert jars.helper_jar_path(iceberg) != before


def test_lakehouse_jit_quick_compiles_with_c1_only_and_an_unknown_value_is_refused(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAKEHOUSE_JIT", raising=False)
    assert "TieredStopAtLevel" not in spark_conf("ci")["spark.driver.extraJavaOptions"]
    monkeypatch.setenv("LAKEHOUSE_JIT", "quick")
    quick = spark_conf("ci")["spark.driver.extraJavaOptions"]
    # C1 alone would get a 48 MB code cache, which Spark's generated classes fill
    assert "-XX:TieredStopAtLevel=1" in quick and "-XX:ReservedCodeCacheSize=512m" in quick
    monkeypatch.setenv("LAKEHOUSE_JIT", "fast")
    with pytest.raises(ValueError, match="LAKEHOUSE_JIT='fast'"):
        spark_conf("ci")


def test_lakehouse_gc_picks_the_collector_and_an_unknown_value_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAKEHOUSE_JIT", raising=False)
    monkeypatch.delenv("LAKEHOUSE_GC", raising=False)
    assert "GC" not in spark_conf("ci")["spark.driver.extraJavaOptions"]  # the JVM's choice
    for choice, flag in (("parallel", "-XX:+UseParallelGC"), ("serial", "-XX:+UseSerialGC")):
        monkeypatch.setenv("LAKEHOUSE_GC", choice)
        assert flag in spark_conf("ci")["spark.driver.extraJavaOptions"].split()
    monkeypatch.setenv("LAKEHOUSE_GC", "zgc")
    with pytest.raises(ValueError, match="LAKEHOUSE_GC='zgc'"):
        spark_conf("ci")


def test_each_location_can_be_overridden(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path / "root"))
    monkeypatch.setenv("LAKEHOUSE_LANDING_DIR", str(tmp_path / "elsewhere"))
    paths = DataPaths.for_target("local")
    assert paths.warehouse == tmp_path / "root" / "warehouse"
    assert paths.landing == str(tmp_path / "elsewhere")
    assert dbt_env("local")["LAKEHOUSE_LANDING_DIR"] == str(tmp_path / "elsewhere")


@pytest.mark.parametrize(
    "location",
    ["s3a://bucket/landing", "hdfs://namenode:8020/data/landing", "file:///srv/landing"],
)
def test_a_landing_uri_passes_through_settings_unchanged(monkeypatch, tmp_path, location):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("LAKEHOUSE_LANDING_DIR", location)
    assert DataPaths.for_target("ci").landing == location
    assert dbt_env("ci")["LAKEHOUSE_LANDING_DIR"] == location


def test_a_relative_location_is_the_projects_wherever_the_command_runs(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # as a profile's path: relative to the dbt project
    monkeypatch.setenv("LAKEHOUSE_LANDING_DIR", "data/landing")
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", "data/elsewhere")
    paths = DataPaths.for_target("ci")
    assert paths.landing == str(PROJECT_DIR / "data" / "landing")
    assert paths.root == PROJECT_DIR / "data" / "elsewhere"


def test_unknown_target_is_refused():
    with pytest.raises(ValueError, match="unknown embedded target"):
        spark_conf("cluster")


def profile_output(name: str):
    """The project profile's output `name` as dbt renders it now: the adapter's credentials."""
    import yaml
    from dbt.config.renderer import ProfileRenderer
    from dbt_common.context import set_invocation_context

    from dbt.adapters.lakehouse.connections import LakehouseCredentials

    set_invocation_context(dict(os.environ))  # what env_var() reads, as dbt sets it
    profiles = yaml.safe_load((PROJECT_DIR / "profiles" / "profiles.yml").read_text())
    output = ProfileRenderer({}).render_data(profiles["lakehouse"]["outputs"][name])
    fields = {k: v for k, v in output.items() if k not in ("type", "threads")}
    return LakehouseCredentials.from_dict(LakehouseCredentials.translate_aliases(fields))


@pytest.mark.parametrize("variables", ["unset", "set", "relative"])
def test_the_profile_and_the_tools_build_one_embedded_target_whatever_its_name(
    monkeypatch, tmp_path, variables
):
    # the adapter reads the profile's fields; the project's tools take a target's name: both
    # must describe the same session, and only the fields, never the name, decide it
    monkeypatch.chdir(tmp_path)  # a relative path resolves against the project, not here
    for name in (
        "LAKEHOUSE_DATA_DIR",
        "LAKEHOUSE_SPARK_MASTER",
        "LAKEHOUSE_WAREHOUSE_DIR",
        "LAKEHOUSE_METASTORE_DIR",
        "LAKEHOUSE_METASTORE_URI",
        "LAKEHOUSE_LANDING_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    if variables == "set":
        monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path / "data"))
        monkeypatch.setenv("LAKEHOUSE_SPARK_MASTER", "local[3]")
        monkeypatch.setenv("LAKEHOUSE_WAREHOUSE_DIR", str(tmp_path / "tables"))
        monkeypatch.setenv("LAKEHOUSE_METASTORE_URI", "thrift://127.0.0.1:9083")
        monkeypatch.setenv("LAKEHOUSE_LANDING_DIR", "s3a://bucket/landing")
    if variables == "relative":
        monkeypatch.setenv("LAKEHOUSE_DATA_DIR", "data/relative")
        monkeypatch.setenv("LAKEHOUSE_METASTORE_DIR", "data/relative/catalog")
        monkeypatch.setenv("LAKEHOUSE_LANDING_DIR", "data/relative/in")
    for name in ("local", "ci", "s3"):
        credentials = profile_output(name)
        assert credentials.embedded_target(PROJECT_DIR) == embedded_target(name), name
    assert profile_output("ci").embedded_target(PROJECT_DIR).catalog_type == "hive"
    assert profile_output("s3").embedded_target(PROJECT_DIR).catalog_type == "rest"
    assert profile_output("cluster").embedded_target(PROJECT_DIR) is None  # Thrift


def test_a_session_target_is_embedded_by_its_data_dir_and_a_wrong_catalog_is_refused(tmp_path):
    from dbt.adapters.lakehouse.connections import LakehouseCredentials

    def credentials(**fields):
        return LakehouseCredentials.from_dict(
            {"method": "session", "host": "localhost", "schema": "s", **fields}
        )

    # no data_dir: dbt-spark's own session (dbt's adapter suite, a user's own target)
    assert credentials().embedded_target(tmp_path) is None
    # any target's name: `dev` gets the same session as `local` had
    target = credentials(data_dir="data", landing_dir="in").embedded_target(tmp_path)
    assert target.paths.root == tmp_path / "data"
    assert target.paths.landing == str(tmp_path / "in")
    assert target.paths.warehouse == tmp_path / "data" / "warehouse"
    with pytest.raises(ValueError, match="catalog_type 'glue': choose one of hive, rest"):
        credentials(data_dir="data", catalog_type="glue").embedded_target(tmp_path)


def test_cluster_settings_travel_through_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEHOUSE_CLUSTER_DIR", str(tmp_path / "cluster"))
    monkeypatch.setenv("LAKEHOUSE_THRIFT_PORT", "20001")
    cluster = ClusterSettings.from_env()
    assert cluster.root == tmp_path / "cluster" and cluster.thrift_port == 20001
    assert cluster.metastore_port == 9083  # the default where nothing is set
    for name, value in cluster.to_env().items():
        monkeypatch.setenv(name, value)
    assert ClusterSettings.from_env() == cluster


def test_thrift_server_keeps_its_tables_in_the_rest_catalog_and_binds_loopback(
    monkeypatch, tmp_path, capsys
):
    """The cluster's storage is the `s3` target's: spark_catalog over the REST catalog, files
    through S3A with the environment's keys, no metastore database of its own anywhere."""
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the-secret-value")
    monkeypatch.setenv("LAKEHOUSE_CATALOG_PORT", "18181")
    monkeypatch.delenv("LAKEHOUSE_LANDING_DIR", raising=False)  # pytest's dbt fixture sets it
    jars = tmp_path / "jars"  # as a verified fetch leaves them (s3a_jars reads the sizes)
    jars.mkdir()
    for name in JARS:
        (jars / name).write_bytes(b"jar")
    (jars / ".verified").write_text("".join(f"{name} 3\n" for name in JARS))
    cluster = ClusterSettings(root=tmp_path / "cluster")
    conf = cluster_spark_conf(cluster)
    assert conf["spark.sql.extensions"] == iceberg_catalog_conf()["spark.sql.extensions"]
    assert conf["spark.sql.catalog.spark_catalog"] == "lakehouse.RestSessionCatalog"
    assert conf["spark.sql.catalog.spark_catalog.type"] == "rest"
    assert conf["spark.sql.catalog.spark_catalog.uri"] == "http://127.0.0.1:18181"
    assert conf["spark.sql.catalogImplementation"] == "in-memory"
    assert conf["spark.lakehouse.landing_dir"] == "s3a://lakehouse-landing/landing"
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(
        "EnvironmentVariableCredentialsProvider"
    )
    class_path = [Path(jar) for jar in conf["spark.executor.extraClassPath"].split(":")]
    assert all(jar.is_file() for jar in class_path) and len(class_path) == 4
    assert {jar.name for jar in class_path} >= set(JARS)
    assert conf["spark.driver.extraClassPath"] == conf["spark.executor.extraClassPath"]
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert cluster.marker in conf["spark.executor.extraJavaOptions"]
    # the server's JVMs compile and collect as the run's others do (LAKEHOUSE_JIT, _GC)
    monkeypatch.setenv("LAKEHOUSE_JIT", "quick")
    monkeypatch.setenv("LAKEHOUSE_GC", "parallel")
    for side in ("driver", "executor"):
        options = cluster_spark_conf(cluster)[f"spark.{side}.extraJavaOptions"].split()
        assert {"-XX:TieredStopAtLevel=1", "-XX:+UseParallelGC"} <= set(options), side
    assert not [key for key in conf if "javax.jdo" in key or "metastore.uris" in key]
    assert "metastore_port" not in cluster.ports()  # the cluster runs no metastore
    # the metastore service that overlapping embedded runs share (test_exactly_once.py)
    assert (
        str(cluster.root / "metastore") in metastore_conf(cluster)["javax.jdo.option.ConnectionURL"]
    )
    remote = remote_catalog_conf("shared", cluster)
    assert remote["spark.sql.catalog.shared.uri"] == cluster.metastore_uri
    monkeypatch.setenv("LAKEHOUSE_CLUSTER_DIR", str(cluster.root))
    spark_config_main(["--target", "cluster"])  # what a user prints to check the settings
    printed = capsys.readouterr().out
    assert "spark.sql.catalog.spark_catalog.credential=<from the environment>" in printed
    assert "the-secret-value" not in printed


def test_a_thrift_statement_is_polled_within_milliseconds_then_less_often():
    """dbt-spark waits the profile's `poll_interval` (whole seconds) between status polls;
    the adapter's wrapper starts at 10 ms and doubles up to it, again for each statement."""
    wrapper = EmptyResultsPyhiveWrapper(None, poll_interval=1)
    waits = [wrapper.poll_interval for _ in range(9)]
    assert waits == [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.0, 1.0]
    assert EmptyResultsPyhiveWrapper(None, poll_interval=0).poll_interval == 0
