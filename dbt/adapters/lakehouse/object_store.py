"""The `s3` target: object storage (S3 API) and an Iceberg REST catalog.

Its Spark settings (`s3_target_conf`), where its services listen (`ServiceSettings`) and
what is checked before its session starts (`check_before_session`). The
same settings point at a team's own services by changing URIs and keys only
(docs/object-storage.md): LAKEHOUSE_S3_ENDPOINT, LAKEHOUSE_CATALOG_URI, LAKEHOUSE_WAREHOUSE
and LAKEHOUSE_LANDING_DIR override what `lakehouse-services` starts here; the keys are always
the environment's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, never a file of the repo.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, fields
from pathlib import Path

from dbt.adapters.lakehouse.s3a_jars import s3a_jars

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


def s3_filesystem(settings: ServiceSettings):
    """A pyarrow S3 client of the store, signed with the environment's keys."""
    from pyarrow import fs

    key, secret = keys()
    return fs.S3FileSystem(
        access_key=key,
        secret_key=secret,
        endpoint_override=settings.s3_endpoint,
        scheme=urllib.parse.urlparse(settings.s3_endpoint).scheme or "http",
        region=os.environ.get("AWS_REGION", "us-east-1"),
        connect_timeout=2,
        request_timeout=5,
    )


def catalog_config(settings: ServiceSettings) -> dict:
    """The REST catalog's `/v1/config` for the warehouse (answers without a token)."""
    url = f"{settings.catalog_uri}/v1/config?warehouse={settings.warehouse}"
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def check_before_session(settings: ServiceSettings, landing: str) -> None:
    """What the `s3` target needs before its session starts, checked in seconds: the store
    answers and accepts the keys, the warehouse's and the landing zone's buckets exist, the
    REST catalog answers. Else a ServiceError naming the fix (Spark's first statement would
    fail minutes later with a stack trace, or create nothing but a log)."""
    store = s3_filesystem(settings)
    wanted = {
        "warehouse (LAKEHOUSE_WAREHOUSE)": settings.warehouse,
        "landing zone (LAKEHOUSE_LANDING_DIR)": landing,
    }
    for role, uri in wanted.items():
        parsed = urllib.parse.urlparse(uri)
        if parsed.scheme not in ("s3", "s3a"):
            continue  # a catalog's warehouse name, or a landing zone elsewhere
        try:
            found = store.get_file_info(parsed.netloc).type.name != "NotFound"
        except OSError as error:
            if "ACCESS_DENIED" in str(error) or "SIGNATURE_DOES_NOT_MATCH" in str(error):
                raise ServiceError(
                    f"the object store at {settings.s3_endpoint} refused AWS_ACCESS_KEY_ID/"
                    "AWS_SECRET_ACCESS_KEY: export the keys of the store"
                ) from error
            raise ServiceError(
                f"the object store at {settings.s3_endpoint} does not answer "
                f"({str(error).splitlines()[0]}): start it with `lakehouse-services start`, "
                "or set LAKEHOUSE_S3_ENDPOINT to your store"
            ) from error
        if not found:
            raise ServiceError(
                f"bucket {parsed.netloc!r} of the {role} does not exist at "
                f"{settings.s3_endpoint}: `lakehouse-services start` creates it here; on "
                "your own store create it, or point the variable at one that exists"
            )
    try:
        catalog_config(settings)
    except urllib.error.HTTPError:
        pass  # it answers (a catalog that wants a token first says so with 401)
    except (OSError, ValueError) as error:
        raise ServiceError(
            f"the Iceberg REST catalog at {settings.catalog_uri} does not answer ({error}): "
            "start it with `lakehouse-services start`, or set LAKEHOUSE_CATALOG_URI to yours"
        ) from error
