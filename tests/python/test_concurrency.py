"""Change-log merges and maintenance on the same merge-on-read table at the same time, from
two sessions, in randomized interleavings: no row may be lost or resurrected against the
ground truth, every writer conflict must be retried to success, and every maintenance
conflict must surface as an error that names it (never a silent half-result).

RELIABILITY_INTERLEAVINGS (default 20) sets how many interleavings run; a larger number
is the long version of this test."""

from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import dataclass, field

from scripts.spark_config import PROJECT_DIR

INTERLEAVINGS = int(os.environ.get("RELIABILITY_INTERLEAVINGS", "20"))
SCHEMA = "concurrency"
PLACEHOLDER = "table_under_test"
ROWS, FILES, BATCHES, MAINTENANCE_STEPS = 1_200, 6, 3, 3
MAX_WRITER_ATTEMPTS = 8
# What Iceberg says when a commit loses against a concurrent one: all of these are
# validation or commit failures, retried (writer) or reported (maintenance).
CONFLICT_MARKERS = (
    "Cannot commit",
    "Found conflicting",
    "Missing required files",
    "found new",
    "CommitFailedException",
    "ValidationException",
)


def is_conflict(error: Exception) -> bool:
    return any(marker in str(error) for marker in CONFLICT_MARKERS)


@dataclass
class Outcome:
    seed: int
    merges: int = 0
    writer_retries: int = 0
    maintenance_runs: list[str] = field(default_factory=list)
    maintenance_conflicts: list[str] = field(default_factory=list)
    lost: int = 0
    resurrected: int = 0
    seconds: float = 0.0


def change_batches(rng: random.Random, truth: dict[int, str]) -> list[list[tuple]]:
    """CDC batches (id, op, value): updates and deletes of live keys, inserts of new ones."""
    batches, live, next_id = [], dict(truth), ROWS
    for batch in range(BATCHES):
        keys = rng.sample(sorted(live), 40)
        changes = [(k, "U", f"u{batch}-{k}") for k in keys[:30]]
        changes += [(k, "D", None) for k in keys[30:]]
        changes += [(next_id + i, "I", f"i{batch}-{next_id + i}") for i in range(10)]
        next_id += 10
        apply(live, changes)
        batches.append(changes)
    return batches


def apply(truth: dict[int, str], changes: list[tuple]) -> None:
    for key, op, value in changes:
        if op == "D":
            truth.pop(key, None)
        else:
            truth[key] = value


# One maintenance step per run, through the project's entry point (thresholds low enough
# that each step acts on these small tables).
POLICIES = {
    "rewrite_data_files": {"rewrite_data_files": {"min_small_files": 2, "min_delete_files": 1}},
    "rewrite_position_delete_files": {
        "rewrite_position_delete_files": {"min_delete_files": 1, "options": {"rewrite-all": True}}
    },
    "expire_snapshots": {
        "expire_snapshots": {
            "older_than_hours": 0,
            "min_window_hours": 0,
            "retain_last": 3,
            "slack_hours": 0,
        }
    },
}


def conflict_line(text: str) -> str | None:
    """The first line that names a conflict, if any."""
    for line in text.splitlines():
        if "CONFLICT" in line or any(marker in line for marker in CONFLICT_MARKERS):
            return line.strip()[:160]
    return None


def run_interleaving(spark, dbt, seed: int) -> Outcome:
    rng = random.Random(seed)
    outcome = Outcome(seed)
    table = f"{SCHEMA}.t{seed}"
    spark.sql(f"create schema if not exists {SCHEMA}")
    spark.sql(f"drop table if exists {table} purge")
    spark.sql(f"""create table {table} (id bigint, value string) using iceberg
                  tblproperties ('format-version' = '2', 'write.delete.mode' = 'merge-on-read',
                                 'write.update.mode' = 'merge-on-read',
                                 'write.merge.mode' = 'merge-on-read',
                                 'commit.retry.num-retries' = '10')""")
    spark.range(ROWS).selectExpr("id", "concat('v-', id) as value").repartition(FILES).writeTo(
        table
    ).append()
    truth = {i: f"v-{i}" for i in range(ROWS)}
    batches = change_batches(rng, truth)
    steps = [rng.choice(list(POLICIES)) for _ in range(MAINTENANCE_STEPS)]
    delays = [rng.uniform(0, 0.8) for _ in range(BATCHES + MAINTENANCE_STEPS)]
    errors: list[BaseException] = []

    def writer() -> None:
        session = spark.newSession()  # its own session state and catalog cache
        try:
            for number, changes in enumerate(batches):
                time.sleep(delays[number])
                staged = session.createDataFrame(changes, "id bigint, op string, value string")
                staged.createOrReplaceTempView(f"changes_{seed}")
                for attempt in range(MAX_WRITER_ATTEMPTS):
                    try:
                        session.sql(f"""
                            merge into {table} as t using changes_{seed} as s on t.id = s.id
                            when matched and s.op = 'D' then delete
                            when matched then update set value = s.value
                            when not matched and s.op != 'D' then insert (id, value)
                                values (s.id, s.value)""")
                        break
                    except Exception as error:  # a conflict: rerun the whole batch
                        if not is_conflict(error) or attempt == MAX_WRITER_ATTEMPTS - 1:
                            raise
                        outcome.writer_retries += 1
                outcome.merges += 1
        except BaseException as error:
            errors.append(error)

    def maintain() -> None:
        """In this thread, on dbt's session, while the writer merges from its own."""
        for number, step in enumerate(steps):
            time.sleep(delays[BATCHES + number])
            args = json.dumps({"table": table, "policy": POLICIES[step]})
            run = dbt(
                ["run-operation", "iceberg_maintain_table", "--args", args], expect_success=False
            )
            conflict = conflict_line(run.log)
            if conflict:  # reported: by the CONFLICT line, or as the run's error
                outcome.maintenance_conflicts.append(f"{step}: {conflict}")
            elif run.success:
                outcome.maintenance_runs.append(step)
            else:
                raise AssertionError(f"maintenance failed without a conflict:\n{run.log[-2000:]}")

    started = time.monotonic()
    thread = threading.Thread(target=writer)
    thread.start()
    maintain()
    thread.join(timeout=600)
    outcome.seconds = time.monotonic() - started
    assert not thread.is_alive(), "the writer hung"
    if errors:
        raise errors[0]

    expected = {i: f"v-{i}" for i in range(ROWS)}
    for changes in batches:
        apply(expected, changes)
    spark.sql(f"refresh table {table}")
    actual = dict(spark.sql(f"select id, value from {table}").collect())
    outcome.lost = sum(1 for k, v in expected.items() if actual.get(k) != v)
    outcome.resurrected = sum(1 for k in actual if k not in expected)
    if outcome.lost or outcome.resurrected:
        history = spark.sql(
            f"select committed_at, snapshot_id, parent_id, operation, summary "
            f"from {table}.snapshots order by committed_at"
        ).collect()
        duplicates = spark.sql(
            f"select id, collect_list(value) from {table} group by id having count(*) > 1"
        ).collect()
        wrong = [(k, v, actual.get(k)) for k, v in expected.items() if actual.get(k) != v][:10]
        (PROJECT_DIR / "results" / f"concurrency-failure-{seed}.txt").write_text(
            "\n".join(
                [
                    f"steps {steps} outcome {outcome}",
                    f"duplicates {duplicates[:10]}",
                    f"wrong {wrong}",
                    *map(str, history),
                ]
            )
        )
        return outcome
    spark.sql(f"drop table {table} purge")
    return outcome


def seeds() -> list[int]:
    chosen = os.environ.get("RELIABILITY_SEEDS")
    return [int(x) for x in chosen.split(",")] if chosen else list(range(INTERLEAVINGS))


def summarize(outcomes: list[Outcome]) -> dict:
    return {
        "interleavings": len(outcomes),
        "merges": sum(o.merges for o in outcomes),
        "writer_retries": sum(o.writer_retries for o in outcomes),
        "maintenance_runs": sum(len(o.maintenance_runs) for o in outcomes),
        "maintenance_conflicts_reported": sum(len(o.maintenance_conflicts) for o in outcomes),
        "rows_lost": sum(o.lost for o in outcomes),
        "rows_resurrected": sum(o.resurrected for o in outcomes),
        "slowest_interleaving_s": round(max(o.seconds for o in outcomes), 1),
        "conflicts": sorted({c[:160] for o in outcomes for c in o.maintenance_conflicts}),
    }


def assert_no_row_lost_and_the_races_real(summary: dict) -> None:
    assert summary["merges"] == summary["interleavings"] * BATCHES  # every batch, retried or not
    assert summary["rows_lost"] == 0 and summary["rows_resurrected"] == 0
    # the races were real: maintenance ran and at least one side had to deal with a conflict
    assert summary["maintenance_runs"] > 0
    assert summary["writer_retries"] + summary["maintenance_conflicts_reported"] > 0


def test_merges_racing_maintenance_never_lose_or_resurrect_a_row(spark, dbt):
    summary = summarize([run_interleaving(spark, dbt, seed) for seed in seeds()])
    results = PROJECT_DIR / "results"
    results.mkdir(exist_ok=True)
    (results / "concurrency.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    assert_no_row_lost_and_the_races_real(summary)
