from pathlib import Path

import pytest

from scripts.spark_config import DataPaths, dbt_env, spark_conf


def test_conf_points_at_a_real_iceberg_runtime_and_loopback(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    conf = spark_conf("ci")
    assert Path(conf["spark.jars"]).name == "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
    assert Path(conf["spark.jars"]).is_file()
    assert conf["spark.sql.catalog.spark_catalog"] == "org.apache.iceberg.spark.SparkSessionCatalog"
    assert conf["spark.hadoop.iceberg.engine.hive.lock-enabled"] == "false"
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "warehouse")
    assert str(tmp_path / "metastore") in conf["spark.hadoop.javax.jdo.option.ConnectionURL"]


def test_each_location_can_be_overridden(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path / "root"))
    monkeypatch.setenv("LAKEHOUSE_LANDING_DIR", str(tmp_path / "elsewhere"))
    paths = DataPaths.for_target("local")
    assert paths.warehouse == tmp_path / "root" / "warehouse"
    assert paths.landing == tmp_path / "elsewhere"
    assert dbt_env("local")["LAKEHOUSE_LANDING_DIR"] == str(tmp_path / "elsewhere")


def test_unknown_target_is_refused():
    with pytest.raises(ValueError, match="unknown embedded target"):
        spark_conf("cluster")
