"""The project's own dbt models on generated landing data, run in this process: shared by B3
(maintenance overhead) and B4 (dbt overhead).

Landing batches are generated once per size into a store (scripts/generate_landing.py) and
copied into a live landing zone as a scheduler would find them. dbt runs on the benchmark's
session with its own target and log folders, so it shares nothing with other dbt runs in the
same checkout; the warehouse layers are dropped before and after (PURGE), so a benchmark
inside a pytest run leaves the schemas as it found them: empty.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from typing import Any

from scripts.bench.common import BenchContext, environment, sql
from scripts.generate_landing import LandingGenerator, Scale
from scripts.spark_config import PROJECT_DIR, dbt_env

SOURCES = ("client_events", "appdb_users", "appdb_videos")
LAYERS = ("ods", "dwd", "dws")
LANDING_SCHEMA = "landing"
SEED = 7

# Initial batches of a full build; B3 lands `repeats` more, one per measured run.
SIZES = {
    "smoke": Scale(users=300, videos=80, events_per_batch=800, batches=2),
    "medium": Scale(users=20_000, videos=2_000, events_per_batch=50_000, batches=3),
    "full": Scale(users=100_000, videos=10_000, events_per_batch=200_000, batches=3),
}


# What a build selects: every layer, except at smoke size where one lineage keeps CI short.
SELECT = {
    "smoke": ["--select", "+dwd_client__events", "--indirect-selection", "cautious"],
    "medium": [],
    "full": [],
}


@dataclass
class DbtOutcome:
    """One dbt invocation: wall time, every statement it sent with Spark's time for it,
    every message it logged and its per-node results."""

    success: bool
    seconds: float
    statements: list[tuple[str, float]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)


class Workload:
    def __init__(self, ctx: BenchContext, scale: Scale | None = None, name: str = "dbt"):
        """`scale` (default: SIZES[ctx.size]) and `name` (its own store) for a benchmark
        whose landing differs from the shared one."""
        self.ctx = ctx
        self.scale = scale or SIZES[ctx.size]
        self.root = ctx.work_dir / f"{name}-{ctx.size}"
        self.store = self.root / "store"
        self.live = self.root / "landing"

    # -- landing --------------------------------------------------------------------------

    def generate(self, batches: int) -> None:
        """Batches 1..n in the store (deterministic; existing ones are kept)."""
        folder = self.store / "landing" / SOURCES[0]
        if len(list(folder.glob("batch=*"))) >= batches:
            return
        scale = Scale(**{**self.scale.__dict__, "batches": batches})
        self.ctx.log(f"generating {batches} landing batches of {scale.events_per_batch:,} events")
        LandingGenerator(self.store, SEED, scale).run(log=lambda _: None)

    def land(self, batches: int) -> None:
        """Make the live landing zone hold exactly batches 1..n."""
        self.generate(batches)
        for source in SOURCES:
            live = self.live / source
            live.mkdir(parents=True, exist_ok=True)
            for batch in range(1, batches + 1):
                name = f"batch={batch:06d}"
                if not (live / name).exists():
                    shutil.copytree(self.store / "landing" / source / name, live / name)

    def clear_landing(self) -> None:
        shutil.rmtree(self.live, ignore_errors=True)

    # -- warehouse ------------------------------------------------------------------------

    def reset_warehouse(self) -> None:
        """Drop every table of the layers (PURGE) and the landing registrations (their
        files are the landing zone's, never deleted)."""
        spark = self.ctx.spark
        existing = {row[0] for row in sql(spark, "show schemas")}
        for schema in (LANDING_SCHEMA, *LAYERS):
            if schema not in existing:
                continue
            views = {row.viewName for row in sql(spark, f"show views in {schema}")}
            for row in sql(spark, f"show tables in {schema}"):
                if row.isTemporary:
                    continue
                if row.tableName in views:  # ODS's landing reports
                    spark.sql(f"drop view if exists {schema}.{row.tableName}")
                    continue
                purge = "" if schema == LANDING_SCHEMA else " purge"
                spark.sql(f"drop table if exists {schema}.{row.tableName}{purge}")

    # -- dbt ------------------------------------------------------------------------------

    def dbt(self, args: list[str], select: list[str] | None = None) -> DbtOutcome:
        """dbt in this process, on this session, with its own target and log folders;
        `select` replaces the size's selection (SELECT)."""
        from dbt.cli.main import dbtRunner

        outcome = DbtOutcome(success=False, seconds=0.0)
        pending: list[str] = []

        def listen(event: Any) -> None:
            name = event.info.name
            if name == "SQLQuery":
                pending.append(event.data.sql)
            elif name == "SQLQueryStatus" and pending:
                outcome.statements.append((pending.pop(0), float(event.data.elapsed)))
            outcome.messages.append(str(event.info.msg))

        with environment(LAKEHOUSE_LANDING_DIR=str(self.live)):
            variables = dbt_env(self.ctx.target)
        flags = [
            "--target", self.ctx.target,
            "--project-dir", str(PROJECT_DIR),
            "--target-path", str(self.root / "target"),
            "--log-path", str(self.root / "logs"),
        ]  # fmt: skip
        with environment(**variables):
            started = time.perf_counter()
            command = [*args, *(SELECT[self.ctx.size] if select is None else select), *flags]
            result = dbtRunner(callbacks=[listen]).invoke(command)
            outcome.seconds = time.perf_counter() - started
        outcome.success = bool(result.success)
        outcome.results = list(getattr(result.result, "results", None) or [])
        if not outcome.success:
            tail = "\n".join(outcome.messages[-40:])
            raise RuntimeError(f"dbt {' '.join(args)} failed:\n{tail}")
        return outcome


MAINTENANCE_LINE = re.compile(
    r"^maintenance (?P<table>\S+): .* \| (?P<steps>.*) "
    r"\| decision (?P<decision>[\d.]+) s \((?P<read>[^)]*)\) \| (?P<s>[\d.]+) s$"
)


@dataclass
class Maintenance:
    table: str
    seconds: float  # the whole hook: decision, steps, log row
    acted: bool  # a step ran; otherwise the table was healthy and only the decision cost
    decision_seconds: float = 0.0
    read: str = ""  # "snapshot summary" or "snapshot summary + files and manifests"


def maintenance_lines(messages: list[str]) -> dict[str, Maintenance]:
    """The maintenance post-hook's own one-line log per model (its own timing)."""
    found = {}
    for message in messages:
        match = MAINTENANCE_LINE.match(message.strip())
        if match:
            # reasons in parentheses may hold ';' themselves
            steps = [s.strip() for s in re.sub(r"\([^)]*\)", "", match["steps"]).split(";")]
            acted = any(s and "skipped" not in s for s in steps)
            found[match["table"]] = Maintenance(
                match["table"], float(match["s"]), acted, float(match["decision"]), match["read"]
            )
    return found
