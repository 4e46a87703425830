"""Start (or reuse) the SparkSession of an embedded target: the JVM found, the `rest` target's
services checked before it starts, the metastore's lock tables ready."""

from __future__ import annotations

import os
import time
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from dbt.adapters.lakehouse.embedded import EmbeddedTarget, spark_conf
from dbt.adapters.lakehouse.java_runtime import export_java_home


def prepare_process() -> None:
    """The process settings a session needs (the Java runtime, the driver's address, UTC).
    Raises RuntimeError, saying what to install, when there is no Java runtime."""
    export_java_home()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # PySpark turns timestamps into naive datetimes in the process's zone: make it UTC,
    # like the session, so Python-side comparisons see the stored values.
    os.environ["TZ"] = "UTC"
    time.tzset()


def start_session(target: EmbeddedTarget) -> SparkSession:
    """The SparkSession dbt-spark's `session` method will reuse (it calls getOrCreate)."""
    prepare_process()
    paths = target.paths
    if target.catalog_type == "rest":  # its services answer, or the run stops here naming the fix
        from dbt.adapters.lakehouse.object_store import check_before_session

        check_before_session(target.services(), str(paths.landing))
    for folder in (paths.warehouse, paths.metastore):
        folder.mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in spark_conf(target).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    ensure_metastore_lock_tables(spark)
    return spark


def ensure_metastore_lock_tables(spark: SparkSession) -> None:
    """The embedded metastore's lock tables (see create_metastore_lock_tables), without the
    locks of a process that died holding them (see release_locks_of_dead_processes)."""
    url = spark.conf.get("spark.hadoop.javax.jdo.option.ConnectionURL", None)
    if url:  # else a remote metastore owns its schema and its locks
        create_metastore_lock_tables(spark.sparkContext._jvm, url)
        released = release_locks_of_dead_processes(spark.sparkContext._jvm, url)
        if released:
            print(f"metastore: released {released} lock(s) left by a process that is gone")


def release_locks_of_dead_processes(jvm: Any, connection_url: str) -> int:
    """Delete every lock of an embedded metastore; returns how many there were. Embedded Derby
    admits one process at a time, so a lock found when this one starts was left by a process
    that is gone: a run killed while it committed. Iceberg's commit waits on such a lock
    (`MetastoreLock.acquireLock`, minutes per try), so the rerun after a crash hung; nothing
    heartbeats or expires it in an embedded metastore (docs/findings.md)."""
    connection = jvm.java.sql.DriverManager.getConnection(connection_url)
    try:
        return int(connection.createStatement().executeUpdate("DELETE FROM HIVE_LOCKS"))
    except Py4JJavaError as error:
        if "does not exist" in str(error.java_exception):
            return 0  # lock tables a crash left half made: nothing to release
        raise
    finally:
        connection.close()


def create_metastore_lock_tables(jvm: Any, connection_url: str) -> None:
    """Create a metastore database's lock tables once. Iceberg takes a metastore lock per
    commit (embedded.iceberg_catalog_conf turns it on); the schema DataNucleus creates lacks
    the tables behind Hive's lock API, and without them every commit retries for minutes. Hive's own
    TxnDbUtil creates them; it fails on a database that has them, which is fine."""
    conf = jvm.org.apache.hadoop.hive.conf.HiveConf()
    conf.set("javax.jdo.option.ConnectionURL", connection_url)
    try:
        jvm.org.apache.hadoop.hive.metastore.txn.TxnDbUtil.prepDb(conf)
    except Py4JJavaError as error:
        if "already exists" not in str(error.java_exception):
            raise
