"""The one owner of the Spark + Iceberg configuration.

The dbt profile (through the LAKEHOUSE_SPARK_CONF environment variable), the Python
scripts and the pytest fixtures all take their settings from `spark_conf()`, so the
three can never drift apart.

    python -m scripts.spark_config --target local          # print the settings
    eval "$(python -m scripts.spark_config --export)"      # then plain `dbt build` works
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
ICEBERG_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
LOG4J_CONFIG = Path(__file__).resolve().parent / "conf" / "log4j2.properties"

# Embedded targets run Spark in this process; "cluster" goes through a Thrift server.
MASTERS = {"local": "local[*]", "ci": "local[2]"}


@dataclass(frozen=True)
class DataPaths:
    """Where one target keeps its state. Everything below `root` is generated."""

    root: Path
    warehouse: Path
    metastore: Path
    landing: Path

    @classmethod
    def for_target(cls, target: str) -> DataPaths:
        root = Path(os.environ.get("LAKEHOUSE_DATA_DIR", PROJECT_DIR / "data" / target))
        root = root.resolve()

        def pick(name: str, default: Path) -> Path:
            return Path(os.environ.get(name, default)).resolve()

        return cls(
            root=root,
            warehouse=pick("LAKEHOUSE_WAREHOUSE_DIR", root / "warehouse"),
            metastore=pick("LAKEHOUSE_METASTORE_DIR", root / "metastore"),
            landing=pick("LAKEHOUSE_LANDING_DIR", root / "landing"),
        )


def iceberg_runtime_jar() -> Path:
    """The Iceberg 1.10.2 Spark runtime jar shipped by snowpark-connect-deps-iceberg 1.0.2."""
    from snowpark_connect_deps_iceberg import get_jar_path

    jar = Path(get_jar_path(ICEBERG_JAR))
    if not jar.is_file():
        raise FileNotFoundError(f"Iceberg runtime jar missing at {jar}")
    return jar


def iceberg_catalog_conf(catalog: str = "spark_catalog") -> dict[str, str]:
    """Iceberg settings shared by every deployment (embedded or Thrift server)."""
    return {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        f"spark.sql.catalog.{catalog}": "org.apache.iceberg.spark.SparkSessionCatalog",
        f"spark.sql.catalog.{catalog}.type": "hive",
        # Without this the first commit against a metastore without a lock service
        # hangs for minutes in MetastoreLock.createLock retries.
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "false",
        "spark.sql.session.timeZone": "UTC",
    }


def spark_conf(target: str = "local") -> dict[str, str]:
    """Every Spark setting of an embedded target, as strings."""
    if target not in MASTERS:
        raise ValueError(f"unknown embedded target {target!r}; choose one of {sorted(MASTERS)}")
    paths = DataPaths.for_target(target)
    metastore_url = f"jdbc:derby:;databaseName={paths.metastore / 'metastore_db'};create=true"
    java_options = (
        f"-Dderby.system.home={paths.metastore} -Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
    )
    return {
        "spark.master": os.environ.get("LAKEHOUSE_SPARK_MASTER", MASTERS[target]),
        "spark.app.name": f"lakehouse-{target}",
        "spark.jars": str(iceberg_runtime_jar()),
        **iceberg_catalog_conf(),
        "spark.sql.warehouse.dir": str(paths.warehouse),
        # A path-based catalog for the verification scripts' scratch tables: no metastore,
        # and pyiceberg reads its tables straight from their metadata files.
        "spark.sql.catalog.verify": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.verify.type": "hadoop",
        "spark.sql.catalog.verify.warehouse": str(paths.root / "verify"),
        "spark.sql.catalog.verify.cache-enabled": "false",  # Java-API commits must be seen
        "spark.hadoop.javax.jdo.option.ConnectionURL": metastore_url,
        "spark.driver.extraJavaOptions": java_options,
        "spark.driver.memory": os.environ.get("LAKEHOUSE_DRIVER_MEMORY", "4g"),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Small data on two cores: fewer, larger tasks. AQE still coalesces.
        "spark.sql.shuffle.partitions": os.environ.get("LAKEHOUSE_SHUFFLE_PARTITIONS", "8"),
    }


def dbt_env(target: str = "local") -> dict[str, str]:
    """Environment variables the dbt profile and project read for an embedded target."""
    paths = DataPaths.for_target(target)
    return {
        "LAKEHOUSE_SPARK_CONF": json.dumps(spark_conf(target)),
        "LAKEHOUSE_LANDING_DIR": str(paths.landing),
        "DBT_PROFILES_DIR": str(PROJECT_DIR / "profiles"),
        "SPARK_LOCAL_IP": "127.0.0.1",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="local", choices=sorted(MASTERS))
    parser.add_argument(
        "--export", action="store_true", help="print `export` lines for the dbt profile"
    )
    args = parser.parse_args(argv)
    if args.export:
        for name, value in dbt_env(args.target).items():
            print(f"export {name}={shlex.quote(value)}")
    else:
        for name, value in spark_conf(args.target).items():
            print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
