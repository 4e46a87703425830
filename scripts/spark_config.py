"""The project's targets by name: their settings for the project's own tools.

An embedded target's Spark settings are the adapter's (dbt/adapters/lakehouse/embedded.py),
built from its profile fields; `embedded_target(name)` builds the same fields from the same
variables as profiles/profiles.yml, so the scripts, the pytest fixtures and plain dbt start
one and the same session (tests/python/test_spark_config.py renders the profile to check).

    python -m scripts.spark_config --target local          # print the settings
    eval "$(python -m scripts.spark_config --export)"      # then plain `dbt build` works
    python -m scripts.spark_config --target cluster        # the Thrift server's settings

The `cluster` target (scripts/cluster.py) shares `iceberg_catalog_conf()` with the embedded
ones; only the catalog's location differs: a Hive Metastore Thrift service instead of an
embedded Derby metastore, so the Thrift server, pytest's session and pyiceberg see one catalog.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

from dbt.adapters.lakehouse import embedded
from dbt.adapters.lakehouse.embedded import (
    INCOMPATIBLE_COLUMN_CHANGES,
    LANDING_DIR_KEY,
    LOG4J_CONFIG,
    EmbeddedTarget,
    iceberg_catalog_conf,
    jvm_options,
)

PROJECT_DIR = Path(__file__).resolve().parent.parent
# The embedded targets of profiles/profiles.yml and their masters: the project's tools take a
# target's name (`--target ci`) and build what its profile output says from the same variables.
# "cluster" goes through a Thrift server; `s3` keeps its tables in object storage and a REST
# catalog (dbt/adapters/lakehouse/object_store.py).
MASTERS = {"local": "local[*]", "ci": "local[2]", "s3": "local[*]"}


def embedded_target(name: str) -> EmbeddedTarget:
    """The embedded target `name` of the project's profile, from this environment."""
    if name not in MASTERS:
        raise ValueError(f"unknown embedded target {name!r}; choose one of {sorted(MASTERS)}")
    return _target(name)


def _target(name: str) -> EmbeddedTarget:
    # the fields profiles.yml renders, resolved as the adapter resolves them (relative paths
    # are the project's); any name has a data folder, `data/<name>` by default
    variable = os.environ.get
    return EmbeddedTarget.resolve(
        PROJECT_DIR,
        variable("LAKEHOUSE_DATA_DIR") or f"data/{name}",
        warehouse_dir=variable("LAKEHOUSE_WAREHOUSE_DIR"),
        metastore_dir=variable("LAKEHOUSE_METASTORE_DIR"),
        landing_dir=variable("LAKEHOUSE_LANDING_DIR"),
        spark_master=variable("LAKEHOUSE_SPARK_MASTER") or MASTERS.get(name, "local[*]"),
        catalog_type="rest" if name == "s3" else "hive",
        app_name=f"lakehouse-{name}",
        metastore_uri=variable("LAKEHOUSE_METASTORE_URI") or None,
    )


class DataPaths(embedded.DataPaths):
    """The adapter's DataPaths, found by a target's name (`cluster` too: its data folder)."""

    @classmethod
    def for_target(cls, target: str) -> DataPaths:
        return cls(**vars(_target(target).paths))


def spark_conf(target: str = "local") -> dict[str, str]:
    """Every Spark setting of the embedded target `target`, as strings."""
    return embedded.spark_conf(embedded_target(target))


@dataclass(frozen=True)
class ClusterSettings:
    """Where the local standalone cluster keeps its state and which loopback ports it uses.

    Every field can be overridden by an environment variable (see `ENV`), so a test can run
    its own cluster on free ports next to a developer's.
    """

    root: Path
    metastore_port: int = 9083
    master_port: int = 7077
    master_webui_port: int = 8080
    worker_port: int = 7078
    worker_webui_port: int = 8081
    thrift_port: int = 10001
    thrift_ui_port: int = 4040
    worker_cores: int = 2
    worker_memory: str = "2g"
    executor_memory: str = "1g"
    driver_memory: str = "1g"
    host: str = "127.0.0.1"

    ENV: ClassVar[dict[str, str]] = {
        "root": "LAKEHOUSE_CLUSTER_DIR",
        "metastore_port": "LAKEHOUSE_METASTORE_PORT",
        "master_port": "LAKEHOUSE_SPARK_MASTER_PORT",
        "master_webui_port": "LAKEHOUSE_SPARK_MASTER_WEBUI_PORT",
        "worker_port": "LAKEHOUSE_SPARK_WORKER_PORT",
        "worker_webui_port": "LAKEHOUSE_SPARK_WORKER_WEBUI_PORT",
        "thrift_port": "LAKEHOUSE_THRIFT_PORT",
        "thrift_ui_port": "LAKEHOUSE_THRIFT_UI_PORT",
        "worker_cores": "LAKEHOUSE_WORKER_CORES",
        "worker_memory": "LAKEHOUSE_WORKER_MEMORY",
        "executor_memory": "LAKEHOUSE_EXECUTOR_MEMORY",
        "driver_memory": "LAKEHOUSE_THRIFT_DRIVER_MEMORY",
    }

    @classmethod
    def from_env(cls) -> ClusterSettings:
        values: dict[str, object] = {}
        for field in fields(cls):
            raw = os.environ.get(cls.ENV.get(field.name, ""))
            if raw is None:
                continue
            values[field.name] = int(raw) if field.type == "int" else raw
        root = Path(str(values.pop("root", PROJECT_DIR / "data" / "cluster"))).resolve()
        return cls(root=root, **values)  # type: ignore[arg-type]

    def to_env(self) -> dict[str, str]:
        """The variables that make `from_env()` in another process return these settings."""
        return {variable: str(getattr(self, name)) for name, variable in self.ENV.items()}

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def metastore(self) -> Path:
        return self.root / "metastore"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def run(self) -> Path:
        """Pid/state files and the worker's scratch folder (executor logs, shuffle files)."""
        return self.root / "run"

    @property
    def metastore_uri(self) -> str:
        return f"thrift://{self.host}:{self.metastore_port}"

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.master_port}"

    @property
    def marker(self) -> str:
        """A JVM option on every process of this cluster: how stop/status find stragglers."""
        return f"-Dlakehouse.cluster={self.root}"

    def ports(self) -> dict[str, int]:
        """The cluster's own ports (the metastore service is apart: `start_metastore`)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name.endswith("_port") and f.name != "metastore_port"
        }


def metastore_conf(cluster: ClusterSettings) -> dict[str, str]:
    """The Hive Metastore service's own settings. Only that process opens its Derby database
    (Derby embedded admits one process); everyone else talks Thrift to the service."""
    url = f"jdbc:derby:;databaseName={cluster.metastore / 'metastore_db'};create=true"
    return {
        "javax.jdo.option.ConnectionURL": url,
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(cluster.warehouse),
        "hive.metastore.event.db.notification.api.auth": "false",
        INCOMPATIBLE_COLUMN_CHANGES.removeprefix(
            "spark.hadoop."
        ): "false",  # see iceberg_catalog_conf
    }


def cluster_spark_conf(cluster: ClusterSettings) -> dict[str, str]:
    """Every Spark setting of the Thrift server submitted to the standalone cluster. Its
    storage is the `s3` target's: Iceberg tables in the REST catalog and the bucket, the
    landing zone in the landing bucket, so no file lives on the server's disk and the
    executors may run on any machine that reaches the store. The landing tables and views
    are Spark's own objects, kept in the server's in-memory catalog (docs/cluster.md)."""
    from dbt.adapters.lakehouse.jars import helper_jar, iceberg_runtime_jar
    from dbt.adapters.lakehouse.object_store import ServiceSettings, rest_catalog_conf, s3a_conf
    from dbt.adapters.lakehouse.s3a_jars import s3a_jars

    paths = DataPaths.for_target("s3")
    services = ServiceSettings.from_env(paths.root)
    runtime = iceberg_runtime_jar()
    jars = [runtime, helper_jar(runtime), *s3a_jars(paths.root / "jars")]
    class_path = ":".join(map(str, jars))
    # the machine's JIT and collector (LAKEHOUSE_JIT, LAKEHOUSE_GC), as every JVM of a run
    java_options = f"{cluster.marker} -Duser.timezone=UTC {jvm_options()}"
    return {
        "spark.master": cluster.master_url,
        "spark.app.name": "lakehouse-thrift-server",
        **iceberg_catalog_conf(),
        **rest_catalog_conf("spark_catalog", "lakehouse.RestSessionCatalog", services),
        **s3a_conf(services),
        # no metastore: a restarted server registers the landing tables again on the next
        # run (on-run-start), and the next build creates its views again
        "spark.sql.catalogImplementation": "in-memory",
        "spark.sql.warehouse.dir": str(cluster.warehouse),  # the in-memory schemas' folders
        LANDING_DIR_KEY: paths.landing,
        # `--jars` alone fails (NoClassDefFoundError: org/apache/iceberg/spark/PathIdentifier):
        # the runtime must be on the driver's and the executors' system class path.
        "spark.driver.extraClassPath": class_path,
        "spark.executor.extraClassPath": class_path,
        "spark.driver.memory": cluster.driver_memory,
        "spark.driver.host": cluster.host,
        "spark.driver.bindAddress": cluster.host,
        "spark.driver.extraJavaOptions": (
            f"{java_options} -Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
        ),
        "spark.executor.extraJavaOptions": java_options,
        "spark.executor.memory": cluster.executor_memory,
        "spark.executor.cores": str(cluster.worker_cores),
        "spark.cores.max": str(cluster.worker_cores),
        # The driver's UI stays on: its REST API shows which executors ran the tasks.
        "spark.ui.port": str(cluster.thrift_ui_port),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": os.environ.get("LAKEHOUSE_SHUFFLE_PARTITIONS", "8"),
    }


def remote_catalog_conf(name: str, cluster: ClusterSettings) -> dict[str, str]:
    """An extra Iceberg catalog over the metastore service of `start_metastore` (embedded
    sessions of several processes sharing one catalog), for a session started elsewhere
    (pytest's): `spark.conf.set` each pair, then read `<name>.<schema>.<table>`."""
    return {
        f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{name}.type": "hive",
        f"spark.sql.catalog.{name}.uri": cluster.metastore_uri,
        f"spark.sql.catalog.{name}.warehouse": str(cluster.warehouse),
        f"spark.sql.catalog.{name}.cache-enabled": "false",
    }


def cluster_dbt_env(cluster: ClusterSettings) -> dict[str, str]:
    """Environment of `dbt --target cluster`: no SparkSession here, only a Thrift client.
    The landing zone is the `s3` target's (LAKEHOUSE_LANDING_DIR moves it)."""
    return {
        "LAKEHOUSE_LANDING_DIR": DataPaths.for_target("s3").landing,
        "LAKEHOUSE_THRIFT_HOST": os.environ.get("LAKEHOUSE_THRIFT_HOST", cluster.host),
        "LAKEHOUSE_THRIFT_PORT": str(cluster.thrift_port),
        "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
    }


def environment_without_project_settings() -> dict[str, str]:
    """This process's environment less the project's own settings (LAKEHOUSE_*, DBT_*): for a
    process of its own on another data folder, which derives the rest from that folder. The
    JVM's choices stay (LAKEHOUSE_JIT, LAKEHOUSE_GC): how this machine's JVMs run, not a
    folder's setting."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LAKEHOUSE_", "DBT_")) or k in ("LAKEHOUSE_JIT", "LAKEHOUSE_GC")
    }


def dbt_env(target: str = "local") -> dict[str, str]:
    """Environment variables the dbt profile and project read for an embedded target."""
    paths = DataPaths.for_target(target)
    return {
        # never the REST catalog's credential: an environment is printed (`--export`) and
        # inherited; the session takes it from the keys when it starts
        "LAKEHOUSE_SPARK_CONF": json.dumps(
            {k: v for k, v in spark_conf(target).items() if not k.endswith(".credential")}
        ),
        "LAKEHOUSE_LANDING_DIR": str(paths.landing),
        "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="local", choices=[*sorted(MASTERS), "cluster"])
    parser.add_argument(
        "--export", action="store_true", help="print `export` lines for the dbt profile"
    )
    args = parser.parse_args(argv)
    if args.target == "cluster":
        cluster = ClusterSettings.from_env()
        if args.export:
            for name, value in cluster_dbt_env(cluster).items():
                print(f"export {name}={shlex.quote(value)}")
        else:
            print_settings(cluster_spark_conf(cluster))
        return 0
    if args.export:
        for name, value in dbt_env(args.target).items():
            print(f"export {name}={shlex.quote(value)}")
    else:
        print_settings(spark_conf(args.target))
    return 0


def print_settings(conf: dict[str, str]) -> None:
    """One `name=value` line per setting; a credential's value is the environment's keys."""
    for name, value in conf.items():
        print(f"{name}={'<from the environment>' if name.endswith('.credential') else value}")


if __name__ == "__main__":
    raise SystemExit(main())
