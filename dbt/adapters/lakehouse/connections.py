"""dbt-spark's connections, plus what this project's targets need when a connection opens.

- `method: session` with a `data_dir` (an embedded target): the SparkSession is started from
  the profile's fields (embedded.py: Iceberg runtime jar, catalog, metastore and warehouse
  under the data folder, the metastore's lock tables) before dbt-spark's session method
  reuses it through `SparkSession.builder.getOrCreate()`. A missing piece (no Java, no Iceberg
  runtime jar) stops dbt at once with the command to run. Without a `data_dir` the session
  is dbt-spark's own, started from `server_side_parameters`. For a command that runs SQL the
  start begins when dbt loads the adapter, beside the project's parse.
- `method: thrift` (the `cluster` target): results are read through a cursor that takes
  Spark 3.5's empty results (see EmptyResultsPyhiveWrapper).
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import (
    PyhiveConnectionWrapper,
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)

from dbt.adapters.lakehouse.embedded import EmbeddedTarget
from dbt.adapters.lakehouse.thrift_results import fetchall

logger = AdapterLogger("lakehouse")
SESSION_BESIDE_PARSE = "the session starts beside the project's parse"
SETUP_HINT = "run `make setup` in the project folder (it installs the pinned dependencies)"


@dataclass
class LakehouseCredentials(SparkCredentials):
    """dbt-spark's fields, and an embedded target's (docs/configuration.md). `data_dir` is what
    makes a `method: session` target embedded: the adapter starts its session. Paths may be
    relative to the dbt project. None of them is a connection key: dbt hashes those into its
    partial-parse state, and a data folder per worker would parse the project again."""

    data_dir: str | None = None
    spark_master: str = "local[*]"
    catalog_type: str = "hive"  # hive (a metastore) or rest (REST catalog, object storage)
    app_name: str = "lakehouse"
    warehouse_dir: str | None = None
    metastore_dir: str | None = None
    metastore_uri: str | None = None
    landing_dir: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("data_dir", "warehouse_dir", "metastore_dir", "metastore_uri", "landing_dir"):
            if getattr(self, name) == "":  # a profile's env_var('X', '') left unset
                setattr(self, name, None)

    @property
    def type(self) -> str:
        return "lakehouse"

    def embedded_target(self, project_dir: Path) -> EmbeddedTarget | None:
        """The embedded target these fields describe, relative paths from `project_dir`;
        None unless the session is the adapter's to start."""
        if self.method != SparkConnectionMethod.SESSION or not self.data_dir:
            return None
        return EmbeddedTarget.resolve(
            project_dir,
            self.data_dir,
            warehouse_dir=self.warehouse_dir,
            metastore_dir=self.metastore_dir,
            landing_dir=self.landing_dir,
            spark_master=self.spark_master,
            catalog_type=self.catalog_type,
            app_name=self.app_name,
            metastore_uri=self.metastore_uri,
        )


class EmptyResultsPyhiveWrapper(PyhiveConnectionWrapper):
    """PyHive 0.7 fails to read the result of a statement without output (`create schema`,
    `refresh table`, ...) from Spark 3.5's Thrift server: its one placeholder column comes back
    as `columns=None`, and PyHive raises `'NoneType' object is not iterable` (apache/kyuubi
    #7106, SPARK-48808). That result is empty, as Spark 3.3 sent it.

    It also asks a statement's status sooner. dbt-spark submits each statement, polls once
    and then sleeps `poll_interval` between polls (a whole number of seconds in the profile,
    at least 1): most statements of a build end within milliseconds, so most waited a second.
    Here the waits start at FIRST_POLL_S and double up to the profile's `poll_interval`."""

    FIRST_POLL_S = 0.01

    @property
    def poll_interval(self) -> float:
        """The next wait between two status polls of the running statement (dbt-spark's loop
        reads it once per wait): each one twice the last, up to the profile's interval."""
        wait = self._next_poll_s
        self._next_poll_s = min(wait * 2, self._longest_poll_s)
        return wait

    @poll_interval.setter
    def poll_interval(self, seconds: float) -> None:
        self._longest_poll_s = float(seconds)
        self._next_poll_s = min(self.FIRST_POLL_S, self._longest_poll_s)

    def execute(self, sql: str, bindings: list[Any] | None = None) -> None:
        self._next_poll_s = min(self.FIRST_POLL_S, self._longest_poll_s)
        super().execute(sql, bindings)

    def fetchall(self) -> list[Any]:
        assert self._cursor, "Cursor not available"
        return fetchall(self._cursor)


class LakehouseConnectionManager(SparkConnectionManager):
    TYPE = "lakehouse"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        session = connection.credentials.method == SparkConnectionMethod.SESSION
        if session:
            start_embedded_session(connection.credentials)
        connection = super().open(connection)
        handle = connection.handle
        if session:
            apply_settings_once(handle)
        if isinstance(handle, PyhiveConnectionWrapper):
            connection.handle = EmptyResultsPyhiveWrapper(
                handle.handle,
                poll_interval=handle.poll_interval,
                query_timeout=handle.query_timeout,
                query_retries=handle.query_retries,
            )
        return connection


def apply_settings_once(handle: Any) -> None:
    """The profile's `server_side_parameters`, applied once per process and settings
    (`handle`: dbt-spark's SessionConnectionWrapper). dbt-spark's session cursor applies them
    before every statement, a py4j call per setting: about 7 ms a statement, 3 s of a
    scheduled build. On a running session that is all they do: static settings cannot change
    any more, and no macro sets the runtime ones. Started here (as dbt-spark does) if no
    session runs yet."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    settings = handle.handle.server_side_parameters
    stopped = SparkContext._active_spark_context is None
    if settings and (stopped or settings != _applied_settings):
        SparkSession.builder.enableHiveSupport().config(map=settings).getOrCreate()
        _applied_settings.clear()
        _applied_settings.update(settings)
    handle.handle.server_side_parameters = {}


_applied_settings: dict[str, Any] = {}


_session_started = threading.Event()
_session_starting = threading.Lock()
_early_start_failed: list[Exception] = []  # what the start beside the parse raised

# dbt's commands that run SQL (`WHICH`: `docs generate` is "generate", `source freshness`
# "freshness"); the others (ls, parse, deps, debug, clean, docs serve) never start a session.
RUNS_SQL = frozenset({"build", "run", "test", "seed", "snapshot", "compile", "show",
                      "run-operation", "generate", "freshness", "retry", "clone"})  # fmt: skip


def start_embedded_session(credentials: LakehouseCredentials, early: bool = False) -> None:
    """The SparkSession of the embedded target dbt runs. dbt's worker threads open their first
    connections at once: one starts the session and prepares the metastore (lock tables,
    dead processes' locks) while the others wait, so none runs a statement on a metastore
    half prepared. A start that failed beside the parse (`early`) is raised by the first
    connection, as a start there would have raised it; a later one tries again."""
    if _session_started.is_set():
        return
    with _session_starting:
        if _early_start_failed:
            raise _early_start_failed.pop()
        if _session_started.is_set():
            return
        try:
            _start_embedded_session(credentials)
        except Exception as error:
            if not early:
                raise
            _early_start_failed.append(error)
            return
        _session_started.set()


def is_the_dbt_command() -> bool:
    """Whether this process is the `dbt` command (its console script).
    A library may build the adapter only to read metadata in its own process (dagster-dbt
    does, with a command's flags): a session started there would hold the embedded
    metastore, which admits one process, and the dbt process it runs would fail to open it."""
    return bool(sys.argv) and Path(sys.argv[0]).name == "dbt"


def start_session_beside_parse(credentials: LakehouseCredentials) -> None:
    """Start an embedded target's session in a thread of its own as soon as dbt has loaded
    the adapter: the JVM's start (seconds) then runs while dbt parses the project, instead of
    after it, and the first connection waits for what is left of it. Only for a command that
    runs SQL, in the `dbt` command's own process. The process settings are made here, before
    the thread starts: dbt reads the environment while it parses."""
    if credentials.method != SparkConnectionMethod.SESSION or not credentials.data_dir:
        return
    if not is_the_dbt_command():
        return
    from dbt.flags import get_flags

    if _session_started.is_set() or getattr(get_flags(), "WHICH", None) not in RUNS_SQL:
        return
    from dbt.adapters.lakehouse.embedded_session import prepare_process

    try:
        prepare_process()
    except RuntimeError:
        return  # no Java runtime: the first connection says which to install
    logger.debug(SESSION_BESIDE_PARSE)
    threading.Thread(
        target=start_embedded_session, args=(credentials, True), name="lakehouse-session",
        daemon=True,
    ).start()  # fmt: skip


def project_dir() -> Path:
    """The dbt project's folder (`--project-dir`), else the current one."""
    from dbt.flags import get_flags

    return Path(getattr(get_flags(), "PROJECT_DIR", None) or ".").resolve()


def _start_embedded_session(credentials: LakehouseCredentials) -> None:
    from pyspark import SparkContext

    # Not SparkSession.getActiveSession(): the active session is per thread, and dbt opens
    # connections in its worker threads, where it is None although the session runs.
    if SparkContext._active_spark_context is not None:
        return  # started: by `lakehouse dbt`, pytest or `bench`, before dbt ran
    target = credentials.embedded_target(project_dir())
    if target is None:
        return  # a session target of a user's own: dbt-spark starts it from the profile
    try:
        from dbt.adapters.lakehouse.embedded_session import start_session
    except ImportError as error:  # pyspark or a pinned dependency missing
        raise RuntimeError(f"cannot start Spark ({error}): {SETUP_HINT}") from error
    from dbt.adapters.lakehouse.object_store import ServiceError

    try:
        start_session(target)
    except ServiceError:
        raise  # a service of the target is down or refuses the keys: its message says why
    except FileNotFoundError as error:  # the Iceberg runtime jar
        raise RuntimeError(f"{error}: {SETUP_HINT}") from error
    except RuntimeError as error:  # no Java runtime: find_java says which to install
        raise RuntimeError(f"{error} Or {SETUP_HINT}.") from error
