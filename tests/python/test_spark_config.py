from pathlib import Path

import pytest

from scripts.spark_config import (
    ClusterSettings,
    DataPaths,
    cluster_spark_conf,
    dbt_env,
    iceberg_catalog_conf,
    metastore_conf,
    remote_catalog_conf,
    spark_conf,
)


def test_conf_points_at_a_real_iceberg_runtime_and_loopback(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    conf = spark_conf("ci")
    jars = [Path(jar) for jar in conf["spark.jars"].split(",")]
    assert [jar.name for jar in jars] == [
        "iceberg-spark-runtime-3.5_2.12-1.10.2.jar",
        "lakehouse-helpers.jar",  # compiled from scripts/java on first use
    ]
    assert all(jar.is_file() for jar in jars)
    assert conf["spark.sql.catalog.spark_catalog"] == "org.apache.iceberg.spark.SparkSessionCatalog"
    assert conf["spark.hadoop.iceberg.engine.hive.lock-enabled"] == "true"  # see session.py
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "warehouse")
    assert str(tmp_path / "metastore") in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]


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


def test_a_relative_landing_path_becomes_absolute(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAKEHOUSE_LANDING_DIR", "data/landing")
    assert DataPaths.for_target("ci").landing == str(tmp_path / "data" / "landing")


def test_unknown_target_is_refused():
    with pytest.raises(ValueError, match="unknown embedded target"):
        spark_conf("cluster")


def test_cluster_settings_travel_through_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEHOUSE_CLUSTER_DIR", str(tmp_path / "cluster"))
    monkeypatch.setenv("LAKEHOUSE_THRIFT_PORT", "20001")
    cluster = ClusterSettings.from_env()
    assert cluster.root == tmp_path / "cluster" and cluster.thrift_port == 20001
    assert cluster.metastore_port == 9083  # the default where nothing is set
    for name, value in cluster.to_env().items():
        monkeypatch.setenv(name, value)
    assert ClusterSettings.from_env() == cluster


def test_thrift_server_shares_the_catalog_settings_and_binds_loopback(tmp_path):
    cluster = ClusterSettings(root=tmp_path, metastore_port=19083)
    conf = cluster_spark_conf(cluster)
    for key, value in iceberg_catalog_conf().items():
        assert conf[key] == value, key
    assert conf["spark.sql.catalog.spark_catalog.uri"] == "thrift://127.0.0.1:19083"
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://127.0.0.1:19083"
    jars = [Path(jar) for jar in conf["spark.executor.extraClassPath"].split(":")]
    assert all(jar.is_file() for jar in jars) and len(jars) == 2
    assert conf["spark.driver.extraClassPath"] == conf["spark.executor.extraClassPath"]
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert cluster.marker in conf["spark.executor.extraJavaOptions"]
    assert "javax.jdo.option.ConnectionURL" not in " ".join(conf)  # no embedded Derby here
    assert str(tmp_path / "metastore") in metastore_conf(cluster)["javax.jdo.option.ConnectionURL"]
    remote = remote_catalog_conf("cluster", cluster)
    assert remote["spark.sql.catalog.cluster.uri"] == cluster.metastore_uri
