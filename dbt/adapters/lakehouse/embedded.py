"""An embedded target: a SparkSession in dbt's own process, and everything it is started with.

`EmbeddedTarget` is what a profile's output says (its data folder, master, catalog);
`spark_conf` turns it into Spark's settings. Nothing here depends on the target's name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from dbt.adapters.lakehouse import class_archive
from dbt.include.lakehouse import PACKAGE_PATH

# A project setting carried in the Spark conf: the landing_dir() macro reads it back.
LANDING_DIR_KEY = "spark.lakehouse.landing_dir"
LOG4J_CONFIG = Path(PACKAGE_PATH) / "conf" / "log4j2.properties"
CATALOG_TYPES = ("hive", "rest")
# LAKEHOUSE_JIT=quick: the JVM compiles with C1 only. On small data most of a build's JVM
# CPU goes to the C2 compiler, whose code it barely uses: a fresh process's first build of
# the sample took 52 JVM CPU-seconds against 125, a warm one 28 against 44 (the wall time of
# a warm build is no shorter: the compiling ran on the other core). C1 alone gets a 48 MB
# code cache, which Spark's generated classes fill: its sweeper then took 20-30 CPU-seconds
# a build, so quick reserves 512 MB. A long session on big data wants C2 (full).
JIT_OPTIONS = {"full": "", "quick": "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=512m"}
# LAKEHOUSE_GC=parallel (or serial): the collector of a JVM that runs small builds. G1, the
# JVM's choice, pays for short pauses with concurrent work on the other core: a test file of
# eight builds took 13-14% less CPU with either, at no more wall time.
GC_OPTIONS = {"g1": "", "parallel": "-XX:+UseParallelGC", "serial": "-XX:+UseSerialGC"}
INCOMPATIBLE_COLUMN_CHANGES = "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes"


def is_uri(location: str) -> bool:
    """True for `scheme://...` (kept exactly as given), false for a plain path."""
    return bool(urlparse(location).scheme) and "://" in location


def normalize(location: str | Path) -> str:
    """A plain path becomes absolute; a URI is returned unchanged."""
    text = str(location)
    if is_uri(text):
        return text
    return str(Path(text).resolve())


@dataclass(frozen=True)
class DataPaths:
    """Where one target keeps its state. Everything below `root` is generated."""

    root: Path
    warehouse: Path
    metastore: Path
    landing: str  # a URI (s3a://, hdfs://, file://) kept as given, or an absolute path


@dataclass(frozen=True)
class EmbeddedTarget:
    """What an embedded target's profile output says. Unset folders derive from `data_dir`;
    `catalog_type` rest keeps the Iceberg tables in a REST catalog and object storage."""

    data_dir: Path
    spark_master: str = "local[*]"
    catalog_type: str = "hive"
    app_name: str = "lakehouse"
    warehouse_dir: Path | None = None
    metastore_dir: Path | None = None
    metastore_uri: str | None = None  # a Hive Metastore service instead of embedded Derby
    landing_dir: str | None = None

    @classmethod
    def resolve(
        cls,
        project_dir: Path,
        data_dir: str,
        *,
        warehouse_dir: str | None = None,
        metastore_dir: str | None = None,
        landing_dir: str | None = None,
        **settings,
    ) -> EmbeddedTarget:
        """The target whose locations are given as a profile gives them: a relative path is
        the dbt project's (`project_dir`), a URI is kept as it is."""

        def folder(path: str | None) -> Path | None:
            return (project_dir / path).resolve() if path else None

        if landing_dir and not is_uri(landing_dir):
            landing_dir = str(folder(landing_dir))
        return cls(
            data_dir=folder(data_dir),
            warehouse_dir=folder(warehouse_dir),
            metastore_dir=folder(metastore_dir),
            landing_dir=landing_dir,
            **settings,
        )

    def __post_init__(self) -> None:
        if self.catalog_type not in CATALOG_TYPES:
            raise ValueError(
                f"catalog_type {self.catalog_type!r}: choose one of {', '.join(CATALOG_TYPES)}"
            )

    @property
    def paths(self) -> DataPaths:
        root = Path(self.data_dir).resolve()
        if self.landing_dir:
            landing = self.landing_dir
        elif self.catalog_type == "rest":
            landing = self.services().landing
        else:
            landing = str(root / "landing")
        return DataPaths(
            root=root,
            warehouse=Path(self.warehouse_dir or root / "warehouse").resolve(),
            metastore=Path(self.metastore_dir or root / "metastore").resolve(),
            landing=normalize(landing),
        )

    def services(self):
        """The object store and REST catalog of a `rest` target (ServiceSettings)."""
        from dbt.adapters.lakehouse.object_store import ServiceSettings

        return ServiceSettings.from_env(Path(self.data_dir).resolve())


def iceberg_catalog_conf(catalog: str = "spark_catalog") -> dict[str, str]:
    """Iceberg settings shared by every deployment (embedded or Thrift server)."""
    return {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        f"spark.sql.catalog.{catalog}": "org.apache.iceberg.spark.SparkSessionCatalog",
        f"spark.sql.catalog.{catalog}.type": "hive",
        # Commits take the metastore's table lock: Hive 2.3 has no atomic pointer swap
        # (HIVE-26882), so without it two concurrent commits to one table can both succeed
        # and one is silently lost. The lock needs the metastore's lock tables, which
        # embedded_session.create_metastore_lock_tables makes (without them commits hang).
        "spark.hadoop.iceberg.engine.hive.lock-enabled": "true",
        # Iceberg mirrors each schema into the metastore's columns; Hive refuses a commit whose
        # columns change type "in their respective positions", which dropping a column that is
        # not the last one does (on_schema_change sync_all_columns). Iceberg's own schema checks
        # the change; Hive's check only blocks it.
        INCOMPATIBLE_COLUMN_CHANGES: "false",
        # A cached table keeps serving the snapshot it loaded (30 s by default) after
        # another session or process commits: health checks and reads would see stale
        # files. Loading fresh metadata per query costs milliseconds.
        f"spark.sql.catalog.{catalog}.cache-enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        # The landing tables (file-source tables over the landing zone) are listed when a
        # query reads them, never served from a cached listing: new files must be visible,
        # and a `refresh table` would list every landed file on every run.
        "spark.sql.filesourceTableRelationCacheSize": "0",
        # A scheduled run repeats the same few hundred statements; Spark's cache of compiled
        # query code holds 100 by default, so each run compiled them all again (Janino, then
        # the JIT). 2,000 keeps a session's repeated runs compiled: 6% off a build here.
        "spark.sql.codegen.cache.maxEntries": "2000",
        # Every statement's start event carries its physical plan as text for the SQL UI,
        # built whether or not a UI runs: "formatted" numbers each operator and lists the
        # subqueries, 3% of a warm build's JVM time (Flight Recorder); "simple" is one tree.
        "spark.sql.ui.explainMode": "simple",
    }


def metastore_location(embedded_url: str, metastore_uri: str | None) -> dict[str, str]:
    """The embedded Derby metastore (one process at a time), or a Hive Metastore service
    (a team's, or `start_metastore`'s): then several processes share one catalog, as
    overlapping scheduled runs do."""
    if not metastore_uri:
        return {"spark.hadoop.javax.jdo.option.ConnectionURL": embedded_url}
    return {
        "spark.sql.catalog.spark_catalog.uri": metastore_uri,
        "spark.hadoop.hive.metastore.uris": metastore_uri,
    }


def machine_option(name: str, choices: dict[str, str]) -> str:
    """The JVM options of the choice named by environment variable `name` (its first choice
    by default): how this machine's JVMs run, not a target's setting."""
    choice = os.environ.get(name, next(iter(choices)))
    if choice not in choices:
        raise ValueError(f"{name}={choice!r}: choose one of {sorted(choices)}")
    return choices[choice]


def jvm_options() -> str:
    """The JIT's options (LAKEHOUSE_JIT: full or quick) and the collector's (LAKEHOUSE_GC: g1,
    parallel or serial)."""
    jit = machine_option("LAKEHOUSE_JIT", JIT_OPTIONS)
    return " ".join(filter(None, (jit, machine_option("LAKEHOUSE_GC", GC_OPTIONS))))


def spark_conf(target: EmbeddedTarget) -> dict[str, str]:
    """Every Spark setting of an embedded target, as strings. The machine's knobs stay in
    the environment: LAKEHOUSE_DRIVER_MEMORY, LAKEHOUSE_SHUFFLE_PARTITIONS, LAKEHOUSE_JIT,
    LAKEHOUSE_GC."""
    from dbt.adapters.lakehouse.jars import helper_jar, iceberg_runtime_jar

    paths = target.paths
    metastore_url = f"jdbc:derby:;databaseName={paths.metastore / 'metastore_db'};create=true"
    java_options = (
        f"-Dderby.system.home={paths.metastore} -Dlog4j2.configurationFile=file:{LOG4J_CONFIG}"
        f" {class_archive.java_options()} {jvm_options()}"
    ).strip()
    conf = {
        "spark.master": target.spark_master,
        "spark.app.name": target.app_name,
        "spark.jars": f"{iceberg_runtime_jar()},{helper_jar()}",
        **iceberg_catalog_conf(),
        "spark.sql.warehouse.dir": str(paths.warehouse),
        # Not Spark's: the landing zone, read by the landing_dir() macro (plain dbt included).
        LANDING_DIR_KEY: str(paths.landing),
        # A path-based catalog for the verification scripts' scratch tables: no metastore,
        # and pyiceberg reads its tables straight from their metadata files.
        "spark.sql.catalog.verify": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.verify.type": "hadoop",
        "spark.sql.catalog.verify.warehouse": str(paths.root / "verify"),
        "spark.sql.catalog.verify.cache-enabled": "false",  # Java-API commits must be seen
        **metastore_location(metastore_url, target.metastore_uri),
        # Iceberg's own metastore client checks the schema version that Spark's Hive client
        # never records: a fresh process whose first statement reads a metadata table
        # (`db.t.snapshots`) failed with "Version information not found in metastore".
        "spark.hadoop.hive.metastore.schema.verification": "false",
        "spark.driver.extraJavaOptions": java_options,
        "spark.driver.memory": os.environ.get("LAKEHOUSE_DRIVER_MEMORY", "4g"),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Small data on two cores: fewer, larger tasks. AQE still coalesces.
        "spark.sql.shuffle.partitions": os.environ.get("LAKEHOUSE_SHUFFLE_PARTITIONS", "8"),
    }
    if target.catalog_type == "rest":
        # Iceberg tables in the REST catalog and the bucket; the embedded Derby metastore
        # keeps only Spark's own objects (landing tables, views)
        from dbt.adapters.lakehouse.object_store import s3_target_conf

        s3 = s3_target_conf(paths.root)
        conf["spark.jars"] += "," + s3.pop("spark.jars.s3a")
        conf.update(s3)
    return conf
