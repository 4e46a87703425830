"""One SparkSession per test run, shared by pytest and the in-process dbt runs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from scripts.spark_config import PROJECT_DIR, dbt_env

# dbt-tests-adapter's fixtures (project, adapter, unique_schema, ...) for
# test_dbt_adapter_suite.py; they do nothing unless a test asks for them.
pytest_plugins = ["dbt.tests.fixtures.project"]


@dataclass
class DbtRun:
    success: bool
    result: Any  # dbt's own result object
    log: str  # every message dbt emitted, errors included


# `lakehouse test` runs two pytest workers (pytest-xdist, `--dist loadgroup`), each with its
# own session, data folder and dbt target/. A file is one group: its module fixtures build
# once. The services of the `s3` target are one set per worker (the `store` fixture): the
# object-store and cluster files share a group, and so one set.
# The longest groups are handed out first, so no worker is left with one at the end: in the
# order of their seconds in docs/testing.md's table (`lakehouse test` passes
# --no-loadscope-reorder: xdist would otherwise order groups by their number of tests).
GROUPS = {"test_object_store.py": "store", "test_cluster.py": "store"}
LONGEST_FIRST = [
    "test_object_store.py",
    "test_cluster.py",
    "test_plain_dbt.py",
    "test_write_audit_publish.py",
    "test_dbt_adapter_suite.py",
    "test_exactly_once.py",
    "test_crash_recovery.py",
    "test_backfill.py",
    "test_dimension_state.py",
    "test_incremental_cost.py",
    "test_warehouse.py",
    "test_adding_a_source.py",
    "test_bad_input.py",
    "test_concurrency.py",
    "test_maintenance.py",
]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.xdist_group(GROUPS.get(item.path.name, item.path.name)))

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: a file's tests keep their order


WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # "gw0", "gw1"; "" without workers
INVOCATIONS = PROJECT_DIR / "target" / f"dbt-invocations{'-' + WORKER if WORKER else ''}.jsonl"
FULL_PARSE = "Unable to do partial parsing"  # a first parse says so too
# the checkout's project: each worker its own target/ (partial parse, compiled SQL)
PROJECT_TARGET = ["--target-path", str(PROJECT_DIR / "target" / WORKER)] if WORKER else []


@contextmanager
def saved_parse_per_vars(args: list[str]) -> Iterator[None]:
    """The checkout's project parsed once per set of vars. dbt keeps one saved parse
    (target/partial_parse.msgpack) and parses the whole project again whenever a command's
    vars differ from that parse's (vars are rendered into configs), so a file alternating
    between two sets (a warehouse and its reference under another prefix) parsed it in full
    each time. The saved parse of each set is kept beside it and put back before its next
    command."""
    target = PROJECT_DIR / "target" / WORKER
    variables = args[args.index("--vars") + 1] if "--vars" in args else ""
    kept = target / f"partial_parse-{hashlib.sha256(variables.encode()).hexdigest()[:12]}.msgpack"
    if kept.exists():
        shutil.copyfile(kept, target / "partial_parse.msgpack")
    try:
        yield
    finally:
        if (target / "partial_parse.msgpack").exists():
            shutil.copyfile(target / "partial_parse.msgpack", kept)


def record_invocation(args: list[str], seconds: float, log: list[str]) -> None:
    """One line per in-process dbt command (test, arguments, seconds, whether dbt parsed the
    whole project) for reading where a file's time goes: mostly its builds."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
    full_parse = any(message.startswith(FULL_PARSE) for message in log)
    record = {"test": test, "args": args, "seconds": round(seconds, 1), "full_parse": full_parse}
    with INVOCATIONS.open("a") as out:
        out.write(json.dumps(record) + "\n")


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An isolated data folder (warehouse, metastore, landing zone) for this test run."""
    path = tmp_path_factory.mktemp("lakehouse")
    os.environ["LAKEHOUSE_DATA_DIR"] = str(path)
    INVOCATIONS.parent.mkdir(exist_ok=True)
    INVOCATIONS.unlink(missing_ok=True)
    return path


@pytest.fixture(scope="session")
def spark(data_dir: Path) -> Iterator[SparkSession]:
    from scripts.session import get_spark

    session = get_spark("ci")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """The `s3` target's services for the whole run, (settings, environment, data folder):
    test_object_store.py builds on them, test_cluster.py's cluster keeps its tables there."""
    from object_store_services import running_store

    with running_store(tmp_path_factory.mktemp("s3target")) as running:
        yield running


@pytest.fixture(scope="session")
def dbt(spark: SparkSession):
    """Run dbt in this process on the shared session: dbt(["build"]) -> DbtRun."""
    from dbt.cli.main import dbtRunner
    from dbt_common.tests import enable_test_caching

    os.environ.update(dbt_env("ci"))
    os.chdir(PROJECT_DIR)
    # dbt's own caches for many commands in one process (its test framework turns them on):
    # Jinja's parse of a macro or model text, kept by the text. A command whose vars differ
    # from the last parse's parses the whole project again, and most of that (5-6 s of 7)
    # was parsing the same macros' text once more.
    enable_test_caching()

    def invoke(
        args: list[str],
        expect_success: bool = True,
        landing: Path | None = None,
        on_message: Callable[[str], None] | None = None,
    ) -> DbtRun:
        """`landing`: read another landing folder for this run only (with var schema_prefix,
        a build of its own beside the warehouse tests' tables). `on_message`: called with
        each message as dbt emits it (a test can act at a chosen moment of the run)."""
        messages: list[str] = []

        def collect(event: Any) -> None:  # called from dbt's worker threads
            message = str(event.info.msg)
            messages.append(message)
            if on_message is not None:
                on_message(message)

        runner = dbtRunner(callbacks=[collect])
        saved = os.environ["LAKEHOUSE_LANDING_DIR"]
        if landing is not None:
            os.environ["LAKEHOUSE_LANDING_DIR"] = str(landing)
        started = time.monotonic()
        try:
            # no manifest.json / run_results.json: a test reads dbt's result object, and
            # writing the 1 MB manifest costs a quarter of a small command's time
            if "--project-dir" in args:  # another project: its own target/
                outcome = runner.invoke([*args, "--target", "ci", "--no-write-json"])
            else:
                with saved_parse_per_vars(args):
                    outcome = runner.invoke(
                        [*args, "--target", "ci", "--no-write-json", *PROJECT_TARGET]
                    )
        finally:
            record_invocation(args, time.monotonic() - started, messages)
            os.environ["LAKEHOUSE_LANDING_DIR"] = saved
            # a dbt process ends with its session; this one is shared by the whole test run,
            # so a run that died before its on-run-end must not leave its branch set
            spark.conf.unset("spark.wap.branch")
        run = DbtRun(outcome.success, outcome.result, "\n".join(messages))
        if expect_success and not run.success:
            raise AssertionError(f"dbt {' '.join(args)} failed:\n{run.log[-3000:]}")
        return run

    return invoke
