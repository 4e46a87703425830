"""Make plain `dbt` work: prepare the Spark session before dbt-spark opens it.

dbt loads this through its plugin interface (the top-level module `dbt_lakehouse`, found by
dbt-core's plugin discovery of `dbt_*` modules) right after it has read the profile and the
project, before any connection opens. For a command that talks to Spark:

- embedded targets (`local`, `ci`): start the SparkSession from `spark_config` (Iceberg runtime
  jar, catalog, metastore and warehouse under the data folder) and create the metastore's lock
  tables (`session.get_spark`). dbt-spark's `session` method then reuses this session through
  `SparkSession.builder.getOrCreate()`, so the profile needs no Spark settings of its own.
- `cluster`: the PyHive fix (`pyhive_compat`); the Thrift server already runs.

A missing piece (no Java, no Iceberg runtime jar, lock tables that cannot be created) stops dbt
at once with a message naming the command to run; nothing is left to hang in a commit.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from scripts.spark_config import MASTERS, PROJECT_DIR

# dbt commands that open a connection. The others (parse, ls, deps, clean, docs serve, init)
# never start a JVM.
CONNECTING_COMMANDS = frozenset(
    {
        "build",
        "clone",
        "compile",
        "debug",
        "freshness",
        "generate",
        "retry",
        "run",
        "run-operation",
        "seed",
        "show",
        "snapshot",
        "test",
    }
)
SETUP_HINT = "run `make setup` in the project folder (it installs the pinned dependencies)"


def default_target(profiles_dir: str | None, profile: str = "lakehouse") -> str:
    """The profile's `target:` when --target / DBT_TARGET is not given."""
    path = Path(profiles_dir or PROJECT_DIR / "profiles") / "profiles.yml"
    try:
        return str(yaml.safe_load(path.read_text())[profile]["target"])
    except (OSError, KeyError, TypeError):
        return "local"


def prepare(command: str | None, target: str) -> None:
    """Everything dbt needs in this process before it connects to `target`."""
    if command not in CONNECTING_COMMANDS:
        return
    if target == "cluster":
        from scripts.pyhive_compat import patch_pyhive

        patch_pyhive()
    elif target in MASTERS:
        start_session(target)
    # Environment variables set here would come too late: dbt has already taken its copy of
    # the environment. The landing folder travels in the Spark conf instead (landing_dir()).


def start_session(target: str) -> None:
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        return  # `lakehouse dbt` and pytest start theirs from the same settings
    try:
        from scripts.session import get_spark
    except ImportError as error:  # pyspark or a pinned dependency missing
        raise RuntimeError(f"cannot start Spark ({error}): {SETUP_HINT}") from error
    try:
        get_spark(target)
    except FileNotFoundError as error:  # the Iceberg runtime jar
        raise RuntimeError(f"{error}: {SETUP_HINT}") from error
    except RuntimeError as error:  # no Java runtime: find_java says which to install
        raise RuntimeError(f"{error} Or {SETUP_HINT}.") from error


def lakehouse_plugin_class() -> type:
    """The dbtPlugin subclass; built lazily so importing this module does not import dbt."""
    from dbt.flags import get_flags
    from dbt.plugins.manager import dbtPlugin

    class LakehouseSession(dbtPlugin):
        def initialize(self) -> None:
            flags = get_flags()
            command = getattr(flags, "WHICH", None)
            target = getattr(flags, "TARGET", None) or default_target(
                getattr(flags, "PROFILES_DIR", None)
            )
            prepare(command, target)

    return LakehouseSession
