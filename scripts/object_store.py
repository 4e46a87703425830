"""The `s3` target: object storage (S3 API) and an Iceberg REST catalog.

Its Spark settings (`s3_target_conf`) and where its services listen (`ServiceSettings`). The
same settings point at a team's own services by changing URIs and keys only
(docs/object-storage.md): LAKEHOUSE_S3_ENDPOINT, LAKEHOUSE_CATALOG_URI, LAKEHOUSE_WAREHOUSE
and LAKEHOUSE_LANDING_DIR override what `lakehouse-services` starts here; the keys are always
the environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never a file of the repo.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from scripts.s3a_jars import s3a_jars

# the settings fields that are ports (each server's gRPC twin is port + grpc_offset)
PORT_FIELDS = ("s3_port", "catalog_port", "master_port", "volume_port", "filer_port", "admin_port")


class ServiceError(RuntimeError):
    """A service is missing, refused the keys, or failed to start or stop: the message says
    what to do."""


@dataclass(frozen=True)
class ServiceSettings:
    """Where the local services listen and what they hold. Each field has a LAKEHOUSE_<NAME>
    variable (upper case), e.g. LAKEHOUSE_S3_PORT=9000."""

    root: Path  # <data folder>/services: the store's data, log and pid
    host: str = "127.0.0.1"
    s3_port: int = 8333
    catalog_port: int = 8181
    master_port: int = 9333
    volume_port: int = 8080
    filer_port: int = 8888
    admin_port: int = 23646
    grpc_offset: int = 10000  # each server's gRPC port is its port + this
    warehouse_bucket: str = "lakehouse"  # an S3 Tables bucket: the REST catalog's warehouse
    landing_bucket: str = "lakehouse-landing"  # a plain bucket: the landing zone

    @classmethod
    def from_env(cls, data_root: Path) -> ServiceSettings:
        root = Path(os.environ.get("LAKEHOUSE_SERVICES_DIR", data_root / "services"))
        values: dict = {"root": root.resolve()}
        for field in fields(cls):
            variable = f"LAKEHOUSE_{field.name.upper()}"
            if field.name != "root" and variable in os.environ:
                raw = os.environ[variable]
                values[field.name] = int(raw) if field.type == "int" else raw
        return cls(**values)

    @property
    def s3_endpoint(self) -> str:
        return os.environ.get("LAKEHOUSE_S3_ENDPOINT", f"http://{self.host}:{self.s3_port}")

    @property
    def catalog_uri(self) -> str:
        return os.environ.get("LAKEHOUSE_CATALOG_URI", f"http://{self.host}:{self.catalog_port}")

    @property
    def warehouse(self) -> str:
        return os.environ.get("LAKEHOUSE_WAREHOUSE", f"s3://{self.warehouse_bucket}/")

    @property
    def landing(self) -> str:
        return f"s3a://{self.landing_bucket}/landing"

    def process_env(self) -> dict[str, str]:
        """The variables that point a process of the `s3` target (Spark, and the landing
        zone's Python readers and writers) at these services."""
        env = {f"LAKEHOUSE_{name.upper()}": str(getattr(self, name)) for name in PORT_FIELDS}
        return {**env, "LAKEHOUSE_S3_ENDPOINT": self.s3_endpoint}

    def ports(self) -> dict[str, int]:
        """Every port the local store opens (checked free before start, closed after stop)."""
        servers = {
            "s3": self.s3_port,
            "master": self.master_port,
            "volume": self.volume_port,
            "filer": self.filer_port,
            "admin": self.admin_port,
        }
        grpc = {f"{name} grpc": port + self.grpc_offset for name, port in servers.items()}
        return {**servers, **grpc, "iceberg": self.catalog_port}


def keys() -> tuple[str, str]:
    """The access key and secret from the environment, or an error naming them."""
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        raise ServiceError(
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set: export the keys of your "
            "object store (for `lakehouse-services`, any pair: they become its admin keys)"
        )
    return key, secret


def s3_target_conf(data_root: Path) -> dict[str, str]:
    """What the `s3` target sets on top of the embedded settings: spark_catalog over the REST
    catalog (Iceberg tables) and Spark's built-in catalog (landing tables, views), files
    through S3A, and the S3A jars."""
    services = ServiceSettings.from_env(data_root)
    return {
        "spark.jars.s3a": ",".join(map(str, s3a_jars(data_root / "jars"))),
        **rest_catalog_conf("spark_catalog", "lakehouse.RestSessionCatalog", services),
        # the verification scripts' scratch tables: in the same catalog and bucket, so they
        # prove what they prove where this target keeps its tables
        **rest_catalog_conf("verify", "org.apache.iceberg.spark.SparkCatalog", services),
        "spark.sql.catalog.verify.cache-enabled": "false",  # Java-API commits must be seen
        **s3a_conf(services),
    }


def s3a_conf(services: ServiceSettings) -> dict[str, str]:
    """Files through S3A at the services' endpoint, with the keys of the environment: the
    `s3` target's session, and the Thrift server and executors of the `cluster` target."""
    endpoint = services.s3_endpoint
    return {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.endpoint": endpoint,
        "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https")).lower(),
        "spark.hadoop.fs.s3a.path.style.access": "true",
        # the REST catalogs' credential is a Spark setting: Spark hides its value wherever it
        # shows settings (UI, event log) only if the name matches this (default: no `credential`)
        "spark.redaction.regex": "(?i)secret|password|token|access[.]key|credential",
        # keys from the environment only (never in a Spark setting a log could print)
        "spark.hadoop.fs.s3a.aws.credentials.provider": (
            "com.amazonaws.auth.EnvironmentVariableCredentialsProvider"
        ),
        # table buckets refuse the deletes of S3A's directory markers: keep them
        "spark.hadoop.fs.s3a.directory.marker.retention": "keep",
        # a store that is down fails the first statement in seconds, not after minutes; but
        # Hadoop 3.3 leaves a 500 (a store's passing InternalError) to the SDK's own retries:
        # 6 ride out about 6 s of them (backoff from 100 ms); 2 failed a build in CI
        "spark.hadoop.fs.s3a.attempts.maximum": "6",
        "spark.hadoop.fs.s3a.retry.limit": "2",
        "spark.hadoop.fs.s3a.connection.establish.timeout": "5000",
    }


def rest_catalog_conf(name: str, implementation: str, services: ServiceSettings) -> dict[str, str]:
    """A Spark catalog over the REST catalog service, its files through S3A."""
    key, secret = keys()
    catalog = f"spark.sql.catalog.{name}"
    return {
        catalog: implementation,
        f"{catalog}.type": "rest",
        f"{catalog}.uri": services.catalog_uri,
        f"{catalog}.warehouse": services.warehouse,
        # OAuth2 client credentials: SigV4-signed REST calls need the AWS SDK v2, absent here
        f"{catalog}.credential": f"{key}:{secret}",
        f"{catalog}.rest.auth.type": "oauth2",
        f"{catalog}.oauth2-server-uri": f"{services.catalog_uri}/v1/oauth/tokens",
        # S3FileIO needs the AWS SDK v2 too: Iceberg reads and writes through Hadoop's S3A
        f"{catalog}.io-impl": "org.apache.iceberg.hadoop.HadoopFileIO",
    }


def pyiceberg_file_io(spark) -> dict[str, str]:
    """pyiceberg's file-IO properties for reading the files of `spark`'s tables: the object
    store's endpoint and the environment's keys on the `s3` target, nothing on local disk."""
    endpoint = spark.conf.get("spark.hadoop.fs.s3a.endpoint", None)
    if not endpoint:
        return {}
    key, secret = keys()
    return {
        "s3.endpoint": endpoint,
        "s3.access-key-id": key,
        "s3.secret-access-key": secret,
        "s3.region": os.environ.get("AWS_REGION", "us-east-1"),
    }
