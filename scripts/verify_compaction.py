"""Verify that compaction is sequence-number safe under concurrent row-level changes.

For each scenario a compaction is planned on snapshot b and runs in steps: plan the files,
rewrite them into a new data file, let a real concurrent commit land, then commit the
compaction through Iceberg's RewriteFiles (validated from b, with or without b's sequence
number: use-starting-sequence-number true | false). Every outcome is compared with
  - the article's claim (seed article 000), where it makes one,
  - the behaviour this script documents for Iceberg 1.10.2,
  - the rows read afterwards versus rows computed independently in Python.
Exit code 1 when a row is lost or resurrected, or an outcome differs from the documented one.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from scripts.cli import parser_from_doc
from scripts.iceberg_java import IcebergTable

NAMESPACE = "verify.compaction"
COMMITTED, REFUSED = "committed", "refused"


@dataclass
class Lab:
    """One scenario's table, the logical rows it should hold, and the snapshot b."""

    spark: SparkSession
    table: IcebergTable
    rows: dict[int, str] = field(default_factory=lambda: {1: "a", 2: "b"})

    def sql(self, statement: str) -> None:
        self.spark.sql(statement.format(t=self.table.name))


# -- the concurrent commits ----------------------------------------------------------


def concurrent_append(lab: Lab) -> None:
    lab.sql("insert into {t} values (3, 'c')")
    lab.rows[3] = "c"


def identical_compaction(lab: Lab, use_starting: bool) -> None:
    run_compaction(lab, use_starting, step=lambda: None)


def equality_delete_update(lab: Lab) -> None:
    lab.table.upsert_with_equality_delete("id", [{"id": 1, "data": "a2"}])
    lab.rows[1] = "a2"


def append_then_equality_delete_update(lab: Lab) -> None:
    concurrent_append(lab)
    lab.table.upsert_with_equality_delete("id", [{"id": 3, "data": "c2"}])
    lab.rows[3] = "c2"


def spark_update(lab: Lab) -> None:
    """Spark's own UPDATE: position deletes (v2), deletion vectors (v3) or a file rewrite
    (copy-on-write), depending on the table's properties."""
    lab.sql("update {t} set data = 'a2' where id = 1")
    lab.rows[1] = "a2"


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    article: dict[bool, str | None]  # use-starting-sequence-number -> the article's claim
    iceberg_1_10_2: dict[bool, str]  # what this script documents, with `why`
    why: str
    concurrent: Callable[..., None]
    format_version: int = 2
    write_mode: str = "merge-on-read"
    needs_option: bool = False  # the concurrent step takes use_starting itself


SCENARIOS = [
    Scenario(
        "1-append",
        "concurrent append of new rows",
        {True: COMMITTED, False: COMMITTED},
        {True: COMMITTED, False: COMMITTED},
        "an append adds files the compaction never read; nothing to validate",
        concurrent_append,
    ),
    Scenario(
        "2-same-compaction",
        "an identical compaction of the same snapshot commits first",
        {True: COMMITTED, False: COMMITTED},
        {True: REFUSED, False: REFUSED},
        "the first compaction already removed the files; RewriteFiles refuses to delete "
        "files that are no longer in the table (Missing required files to delete), so the "
        "second fails instead of duplicating rows. The article's text describes a second "
        "compaction started after the first succeeded: that one plans on the compacted "
        "snapshot and commits. Truly concurrent, the second is refused whatever the option",
        identical_compaction,
        needs_option=True,
    ),
    Scenario(
        "3-eq-delete-in-compacted",
        "equality-delete update of a row inside the compacted files",
        {True: COMMITTED, False: REFUSED},
        {True: COMMITTED, False: REFUSED},
        "with b's sequence number the new file stays older than the delete, which still "
        "applies; with a fresh number the delete would no longer apply, so Iceberg refuses",
        equality_delete_update,
    ),
    Scenario(
        "4-append-then-eq-delete",
        "append c, then equality-delete update of c's rows",
        {True: COMMITTED, False: REFUSED},
        {True: COMMITTED, False: REFUSED},
        "validation sees a new equality delete after b and cannot prove it misses the "
        "compacted files, so without b's sequence number it refuses",
        append_then_equality_delete_update,
    ),
    Scenario(
        "5-spark-mor-v2",
        "Spark merge-on-read UPDATE (position deletes, format v2)",
        {True: None, False: None},
        {True: REFUSED, False: REFUSED},
        "a position delete names a replaced file; it can never be carried over, whatever "
        "the sequence number (found new position delete for replaced data file)",
        spark_update,
    ),
    Scenario(
        "6-spark-mor-v3",
        "Spark merge-on-read UPDATE (deletion vectors, format v3)",
        {True: None, False: None},
        {True: REFUSED, False: REFUSED},
        "a deletion vector is bound to the replaced file, like a position delete",
        spark_update,
        format_version=3,
    ),
    Scenario(
        "7-spark-cow",
        "Spark copy-on-write UPDATE",
        {True: None, False: None},
        {True: REFUSED, False: REFUSED},
        "the update already replaced a file the compaction wants to remove",
        spark_update,
        write_mode="copy-on-write",
    ),
]


# -- the compaction, in steps ----------------------------------------------------------


@dataclass
class Planned:
    snapshot_id: int
    sequence_number: int
    files: list[Any]
    rewritten: list[Any]


def plan_and_rewrite(lab: Lab) -> Planned:
    """Plan on the current snapshot (b) and write its rows into one new data file."""
    snapshot = lab.table.current_snapshot()
    files = lab.table.data_files(snapshot.snapshotId())
    rows = (
        lab.spark.read.option("snapshot-id", snapshot.snapshotId())
        .table(lab.table.name)
        .orderBy("id")
        .collect()
    )
    new_file = lab.table.write_data_file([r.asDict() for r in rows], prefix="compacted")
    return Planned(snapshot.snapshotId(), snapshot.sequenceNumber(), files, [new_file])


def commit_planned(lab: Lab, planned: Planned, use_starting: bool) -> int:
    return lab.table.commit_rewrite(
        planned.files,
        planned.rewritten,
        planned.snapshot_id,
        planned.sequence_number if use_starting else None,
    )


def run_compaction(lab: Lab, use_starting: bool, step: Callable[[], None]) -> int:
    planned = plan_and_rewrite(lab)
    step()
    return commit_planned(lab, planned, use_starting)


# -- observation ----------------------------------------------------------


def java_message(error: Py4JJavaError) -> str:
    return str(error.java_exception.getMessage())


def short(message: str) -> str:
    """Iceberg's message without the full DataFile dump: just the file's name."""
    head, _, rest = message.partition(": GenericDataFile{")
    if rest:
        path = rest.split("file_path=", 1)[1].split(",", 1)[0]
        return f"{head}: {Path(path).name}"
    head, _, paths = message.partition(": ")
    if not paths:
        return message
    return f"{head}: " + ", ".join(Path(p).name if "/" in p else p for p in paths.split(","))


def observed_rows(lab: Lab) -> dict[int, str]:
    return {r.id: r.data for r in lab.spark.table(lab.table.name).collect()}


def added_file_sequence_numbers(lab: Lab, snapshot_id: int) -> list[dict[str, int]]:
    entries = lab.spark.sql(f"""
        select sequence_number, file_sequence_number from {lab.table.name}.entries
        where status = 1 and snapshot_id = {snapshot_id} and data_file.content = 0
    """).collect()
    return [{"data_sequence_number": e[0], "file_sequence_number": e[1]} for e in entries]


def new_lab(spark: SparkSession, name: str, format_version: int, write_mode: str) -> Lab:
    table = IcebergTable(spark, f"{NAMESPACE}.{name}")
    spark.sql(f"create namespace if not exists {NAMESPACE}")
    spark.sql(f"drop table if exists {table.name} purge")
    spark.sql(f"""
        create table {table.name} (id int, data string) using iceberg
        tblproperties ('format-version' = '{format_version}',
                       'write.delete.mode' = '{write_mode}',
                       'write.update.mode' = '{write_mode}',
                       'write.merge.mode' = '{write_mode}')
    """)
    lab = Lab(spark, table)
    lab.sql("insert into {t} values (1, 'a')")  # snapshot a, sequence number 1
    lab.sql("insert into {t} values (2, 'b')")  # snapshot b, sequence number 2
    return lab


@dataclass
class Result:
    scenario: str
    title: str
    use_starting_sequence_number: bool
    article: str | None
    documented: str
    observed: str
    message: str | None
    new_file_sequence_numbers: list[dict[str, int]]
    rows_expected: dict[int, str]
    rows_observed: dict[int, str]
    rows_correct: bool
    outcome_as_documented: bool
    why: str


def run_scenario(spark: SparkSession, scenario: Scenario, use_starting: bool) -> Result:
    name = f"s{scenario.key.split('-')[0]}_{'start' if use_starting else 'fresh'}"
    lab = new_lab(spark, name, scenario.format_version, scenario.write_mode)

    def concurrent() -> None:
        if scenario.needs_option:
            scenario.concurrent(lab, use_starting)
        else:
            scenario.concurrent(lab)

    planned = plan_and_rewrite(lab)
    concurrent()
    message, sequence_numbers = None, []
    try:
        snapshot_id = commit_planned(lab, planned, use_starting)
        observed = COMMITTED
        sequence_numbers = added_file_sequence_numbers(lab, snapshot_id)
    except Py4JJavaError as error:
        observed, message = REFUSED, java_message(error)
    rows = observed_rows(lab)
    return Result(
        scenario.key,
        scenario.title,
        use_starting,
        scenario.article[use_starting],
        scenario.iceberg_1_10_2[use_starting],
        observed,
        message,
        sequence_numbers,
        dict(sorted(lab.rows.items())),
        dict(sorted(rows.items())),
        rows == lab.rows,
        observed == scenario.iceberg_1_10_2[use_starting],
        scenario.why,
    )


def demonstrate_resurrection(spark: SparkSession, use_starting: bool) -> dict[str, Any]:
    """Why the rule exists: bypass validation (validate from the delete's own snapshot) and
    commit the compaction. A fresh sequence number brings the deleted row back; b's keeps
    it deleted."""
    lab = new_lab(spark, f"demo_{'start' if use_starting else 'fresh'}", 2, "merge-on-read")
    planned = plan_and_rewrite(lab)
    delete_snapshot = lab.table.delete_with_equality_delete("id", [1])
    del lab.rows[1]
    lab.table.commit_rewrite(
        planned.files,
        planned.rewritten,
        delete_snapshot,
        planned.sequence_number if use_starting else None,
    )
    rows = observed_rows(lab)
    return {
        "use_starting_sequence_number": use_starting,
        "deleted_row_resurrected": 1 in rows,
        "expected_resurrected": not use_starting,
        "rows_observed": dict(sorted(rows.items())),
    }


# -- report ----------------------------------------------------------


def verify(spark: SparkSession, scenarios: list[Scenario] = SCENARIOS) -> dict[str, Any]:
    results = [run_scenario(spark, s, opt) for s in scenarios for opt in (True, False)]
    demos = [demonstrate_resurrection(spark, opt) for opt in (True, False)]
    return {"results": [asdict(r) for r in results], "resurrection_demo": demos}


def failures(report: dict[str, Any]) -> list[str]:
    problems = []
    for r in report["results"]:
        label = (
            f"{r['scenario']} (use-starting-sequence-number={r['use_starting_sequence_number']})"
        )
        if not r["rows_correct"]:
            problems.append(f"{label}: rows {r['rows_observed']} != expected {r['rows_expected']}")
        if not r["outcome_as_documented"]:
            problems.append(f"{label}: {r['observed']}, documented {r['documented']}")
    for demo in report["resurrection_demo"]:
        if demo["deleted_row_resurrected"] != demo["expected_resurrected"]:
            problems.append(f"resurrection demo {demo}: unexpected")
    return problems


def render(report: dict[str, Any]) -> str:
    def opt(flag: bool) -> str:
        return str(flag).lower()

    header = (
        f"{'scenario':<26} {'option':<6} {'article':<10} {'1.10.2':<10} {'observed':<10} "
        "rows  new file seq (data/file)"
    )
    lines = [header, "-" * len(header)]
    for r in report["results"]:
        seqs = ", ".join(
            f"{s['data_sequence_number']}/{s['file_sequence_number']}"
            for s in r["new_file_sequence_numbers"]
        )
        lines.append(
            f"{r['scenario']:<26} {opt(r['use_starting_sequence_number']):<6} "
            f"{r['article'] or 'n/a':<10} {r['documented']:<10} {r['observed']:<10} "
            f"{'ok' if r['rows_correct'] else 'WRONG':<5} {seqs or '-'}"
        )
    lines.append("")
    for r in report["results"]:
        if r["message"]:
            lines.append(
                f"{r['scenario']} / {opt(r['use_starting_sequence_number'])}: {short(r['message'])}"
            )
    lines.append("")
    for r in report["results"]:
        if r["article"] and r["article"] != r["observed"]:
            lines.append(
                f"article vs 1.10.2, {r['scenario']} / {opt(r['use_starting_sequence_number'])}: "
                f"article says {r['article']}, Iceberg {r['observed']}: {r['why']}"
            )
    for demo in report["resurrection_demo"]:
        fate = "RESURRECTED" if demo["deleted_row_resurrected"] else "stays deleted"
        lines.append(
            "validation bypassed, use-starting-sequence-number="
            f"{opt(demo['use_starting_sequence_number'])}: deleted row {fate} "
            f"-> rows {demo['rows_observed']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("verify-compaction", __doc__)
    parser.add_argument("--target", default="local", help="whose SparkSession settings to use")
    parser.add_argument(
        "--json",
        type=Path,
        default=Path("results/verify_compaction.json"),
        help="where to write the results (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    from scripts.session import get_spark

    report = verify(get_spark(args.target))
    print(render(report))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, default=str))
    problems = failures(report)
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    print(f"\n{'FAILED' if problems else 'OK'}: results in {args.json}")
    return exit_code(report)


def exit_code(report: dict[str, Any]) -> int:
    return 1 if failures(report) else 0


if __name__ == "__main__":
    sys.exit(main())
