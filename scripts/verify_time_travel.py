"""Verify that time-travel reads return exactly what was written.

Scripted mode (default) writes a history to a scratch Iceberg table (appends, a
merge-on-read update and delete, a tag, a branch with its own commit, a compaction) and
records the expected rows at each snapshot as it is created, from the script's own model of
the table, never from reading it back. It then reads every snapshot back by snapshot id,
by timestamp (between two commits and exactly at a commit), by tag and branch, through Spark
SQL (VERSION AS OF / TIMESTAMP AS OF), the DataFrame options and pyiceberg; checks that
the compaction changed no earlier snapshot; shows what an incremental read between two
snapshots returns and which snapshot kinds it silently skips; expires snapshots and checks
that expired ones fail clearly while retained ones still read.

With --table (e.g. dwd.dim_users) it checks a warehouse table built by dbt instead: every
snapshot must read the same through every path, and match its snapshot summary's counts.
Exit code 1 when any read differs from what is expected.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, IllegalArgumentException
from pyspark.sql import DataFrame, SparkSession

from scripts.cli import parser_from_doc
from scripts.iceberg_java import IcebergTable

SCRATCH_TABLE = "verify.time_travel.history"
Rows = dict[int, str]


def checksum(rows: list[tuple]) -> str:
    """Order-independent digest of a table's rows."""
    digest = hashlib.sha256()
    for row in sorted(rows, key=repr):
        digest.update(repr(row).encode())
    return digest.hexdigest()[:16]


def normalised(value: Any) -> Any:
    """Spark returns naive UTC datetimes (session zone UTC), pyiceberg aware ones."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def rows_of(frame: DataFrame) -> list[tuple]:
    return [tuple(normalised(v) for v in r) for r in frame.collect()]


@dataclass
class Check:
    what: str
    path: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    table: str
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, what: str, path: str, ok: bool, detail: str = "") -> None:
        self.checks.append(Check(what, path, ok, detail))

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


# -- the scripted history ----------------------------------------------------------


@dataclass
class Commit:
    label: str
    snapshot_id: int
    committed_ms: int
    operation: str
    expected: str  # checksum of the rows the script says the snapshot holds
    rows: Rows


def write_history(spark: SparkSession) -> tuple[IcebergTable, list[Commit], dict[str, Any]]:
    table = IcebergTable(spark, SCRATCH_TABLE)
    spark.sql("create namespace if not exists verify.time_travel")
    spark.sql(f"drop table if exists {table.name} purge")
    spark.sql(f"""
        create table {table.name} (id int, data string) using iceberg
        tblproperties ('format-version' = '2', 'write.update.mode' = 'merge-on-read',
                       'write.delete.mode' = 'merge-on-read')
    """)
    model: Rows = {}
    commits: list[Commit] = []

    def commit(label: str, statement: str, change: dict[int, str | None]) -> None:
        spark.sql(statement.format(t=table.name))
        for key, value in change.items():
            if value is None:
                model.pop(key)
            else:
                model[key] = value
        snapshot = table.current_snapshot()
        commits.append(
            Commit(
                label,
                snapshot.snapshotId(),
                snapshot.timestampMillis(),
                str(snapshot.operation()),
                checksum(list(model.items())),
                dict(model),
            )
        )

    commit(
        "append 1-3",
        "insert into {t} values (1, 'a'), (2, 'b'), (3, 'c')",
        {1: "a", 2: "b", 3: "c"},
    )
    commit("append 4-5", "insert into {t} values (4, 'd'), (5, 'e')", {4: "d", 5: "e"})
    commit("update 2 (merge-on-read)", "update {t} set data = 'B' where id = 2", {2: "B"})
    commit("delete 3 (merge-on-read)", "delete from {t} where id = 3", {3: None})
    spark.sql(
        f"alter table {table.name} create tag v_after_append_4_5 "
        f"as of version {commits[1].snapshot_id}"
    )
    spark.sql(
        f"alter table {table.name} create branch audit as of version {commits[2].snapshot_id}"
    )
    spark.sql(f"insert into {table.name}.branch_audit values (7, 'g')")
    branch_rows = {**commits[2].rows, 7: "g"}
    commit("append 6", "insert into {t} values (6, 'f')", {6: "f"})
    commit(
        "compaction (rewrite-all)",
        "call verify.system.rewrite_data_files(table => 'time_travel.history', "
        "options => map('rewrite-all', 'true'))",
        {},
    )
    refs = {
        "tag": ("v_after_append_4_5", commits[1].expected),
        "branch": ("audit", checksum(list(branch_rows.items()))),
    }
    return table, commits, refs


# -- read paths ----------------------------------------------------------


def read_paths(spark: SparkSession, name: str, snapshot_id: int) -> dict[str, list[tuple]]:
    return {
        "sql VERSION AS OF": rows_of(
            spark.sql(f"select * from {name} version as of {snapshot_id}")
        ),
        "option snapshot-id": rows_of(spark.read.option("snapshot-id", snapshot_id).table(name)),
    }


def pyiceberg_rows(table: IcebergTable, snapshot_id: int) -> list[tuple]:
    from pyiceberg.table import StaticTable

    location = table.load().operations().current().metadataFileLocation()
    static = StaticTable.from_metadata(str(location), pyiceberg_file_io(table.spark))
    arrow = static.scan(snapshot_id=snapshot_id).to_arrow()
    return [tuple(normalised(v) for v in row.values()) for row in arrow.to_pylist()]


def pyiceberg_file_io(spark) -> dict[str, str]:
    """pyiceberg's file-IO properties for reading the files of `spark`'s tables: the object
    store's endpoint and the environment's keys on the `s3` target, nothing on local disk."""
    endpoint = spark.conf.get("spark.hadoop.fs.s3a.endpoint", None)
    if not endpoint:
        return {}
    from dbt.adapters.lakehouse.object_store import keys

    key, secret = keys()
    return {
        "s3.endpoint": endpoint,
        "s3.access-key-id": key,
        "s3.secret-access-key": secret,
        "s3.region": os.environ.get("AWS_REGION", "us-east-1"),
    }


def ts_literal(ms: int) -> str:
    """A UTC timestamp literal with milliseconds (the session time zone is UTC)."""
    seconds, millis = divmod(ms, 1000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S") + f".{millis:03d}"


def timestamp_reads(spark: SparkSession, name: str, ms: int) -> dict[str, list[tuple]]:
    literal = ts_literal(ms)
    return {
        "sql TIMESTAMP AS OF": rows_of(
            spark.sql(f"select * from {name} timestamp as of '{literal}'")
        ),
        "option as-of-timestamp": rows_of(spark.read.option("as-of-timestamp", ms).table(name)),
    }


def verify_scripted(spark: SparkSession) -> Report:
    return check_history(spark, *write_history(spark))


def check_history(
    spark: SparkSession, table: IcebergTable, commits: list[Commit], refs: dict[str, Any]
) -> Report:
    """Read the recorded history back through every path and compare with the record."""
    report = Report(table.name)
    name = table.name
    for c in commits:  # every snapshot, read after the compaction
        for path, rows in read_paths(spark, name, c.snapshot_id).items():
            report.add(f"snapshot {c.label}", path, checksum(rows) == c.expected)
        rows = pyiceberg_rows(table, c.snapshot_id)
        report.add(
            f"snapshot {c.label}", "pyiceberg scan(snapshot_id)", checksum(rows) == c.expected
        )
        for path, rows in timestamp_reads(spark, name, c.committed_ms).items():
            report.add(f"exactly at commit of {c.label}", path, checksum(rows) == c.expected)
    for before, after in pairwise(commits):
        if after.committed_ms - before.committed_ms >= 2:
            middle = (before.committed_ms + after.committed_ms) // 2
            for path, rows in timestamp_reads(spark, name, middle).items():
                report.add(
                    f"between {before.label} and {after.label}",
                    path,
                    checksum(rows) == before.expected,
                )
    for kind, (ref, expected) in refs.items():
        report.add(
            f"{kind} {ref}",
            "sql VERSION AS OF",
            checksum(rows_of(spark.sql(f"select * from {name} version as of '{ref}'"))) == expected,
        )
        report.add(
            f"{kind} {ref}",
            f"option {kind}",
            checksum(rows_of(spark.read.option(kind, ref).table(name))) == expected,
        )
    # read back, not taken from the record: a compaction that changed content would differ
    compacted, previous = commits[-1], commits[-2]
    before_read = rows_of(spark.sql(f"select * from {name} version as of {previous.snapshot_id}"))
    after_read = rows_of(spark.sql(f"select * from {name} version as of {compacted.snapshot_id}"))
    report.add(
        "compaction changed no content",
        "read before vs after, operation",
        checksum(after_read) == checksum(before_read) and compacted.operation == "replace",
    )
    check_incremental_reads(spark, name, commits, report)
    check_expiry(spark, table, commits, report)
    report.notes.append(
        "pyiceberg 0.12 reads position deletes (what Spark's merge-on-read writes) but refuses "
        "to plan a snapshot with equality deletes ('PyIceberg does not yet support equality "
        "deletes'); tables written by Flink upserts need Spark to time-travel."
    )
    return report


def check_incremental_reads(spark, name: str, commits: list[Commit], report: Report) -> None:
    """An incremental read returns appended rows only; overwrite and delete snapshots in the
    range are skipped without an error: the trap for downstream consumers."""
    first, second = commits[0], commits[1]
    appended = rows_of(
        spark.read.option("start-snapshot-id", first.snapshot_id)
        .option("end-snapshot-id", second.snapshot_id)
        .table(name)
    )
    expected = {k: v for k, v in second.rows.items() if k not in first.rows}
    report.add(
        "incremental read append 1-3 -> append 4-5",
        "start/end-snapshot-id",
        dict(appended) == expected,
        f"rows {sorted(appended)}",
    )
    start, end = commits[1], commits[4]  # spans the update, the delete and an append
    try:
        rows = rows_of(
            spark.read.option("start-snapshot-id", start.snapshot_id)
            .option("end-snapshot-id", end.snapshot_id)
            .table(name)
        )
        skipped = [c.label + f" ({c.operation})" for c in commits[2:5] if c.operation != "append"]
        only_appended = dict(rows) == {6: "f"}
        report.add(
            "incremental read across update/delete",
            "start/end-snapshot-id",
            only_appended,
            f"returned {sorted(rows)}; silently skipped: {', '.join(skipped)}",
        )
        report.notes.append(
            "incremental reads between snapshots return appended rows only and skip "
            f"{', '.join(skipped)} without an error: the update of id 2 and the delete of id 3 "
            "never reach an incremental consumer. Consume merge-on-read tables by snapshot "
            "diff (time travel) or by the changelog that fed them instead."
        )
    except (AnalysisException, IllegalArgumentException, Py4JJavaError) as error:
        report.add(
            "incremental read across update/delete",
            "start/end-snapshot-id",
            True,
            f"refused: {str(error).splitlines()[0]}",
        )


def check_expiry(spark, table: IcebergTable, commits: list[Commit], report: Report) -> None:
    name = table.name
    cutoff = commits[4].committed_ms  # keep "append 6" and later; tagged snapshots survive
    spark.sql(f"""call verify.system.expire_snapshots(table => 'time_travel.history',
                  older_than => timestamp '{ts_literal(cutoff)}', retain_last => 1)""")
    live = {r[0] for r in spark.sql(f"select snapshot_id from {name}.snapshots").collect()}
    expired = [c for c in commits if c.snapshot_id not in live]
    report.add(
        "expiry removed old snapshots",
        "snapshots table",
        len(expired) > 0,
        f"expired: {', '.join(c.label for c in expired)}",
    )
    report.add("expiry kept the tagged snapshot", "snapshots table", commits[1].snapshot_id in live)
    for c in commits:
        if c.snapshot_id in live:
            rows = rows_of(spark.sql(f"select * from {name} version as of {c.snapshot_id}"))
            report.add(
                f"after expiry, retained {c.label}",
                "sql VERSION AS OF",
                checksum(rows) == c.expected,
            )
            continue
        try:
            spark.sql(f"select * from {name} version as of {c.snapshot_id}").collect()
            report.add(
                f"after expiry, expired {c.label}",
                "sql VERSION AS OF",
                False,
                "an expired snapshot still read",
            )
        except (AnalysisException, IllegalArgumentException, Py4JJavaError) as error:
            message = str(error).splitlines()[0]
            report.add(
                f"after expiry, expired {c.label}",
                "sql VERSION AS OF",
                "snapshot" in message.lower(),
                f"fails clearly: {message[:100]}",
            )


# -- a warehouse table ----------------------------------------------------------


def verify_existing(spark: SparkSession, name: str) -> Report:
    """No independent history exists for a dbt-built table: every read path must agree for
    every retained snapshot. A rewrite (`replace`) must read exactly what its parent read;
    any other snapshot must hold the live row count its summary states. (A rewrite's own
    summary overstates position deletes: the deletes of the files it replaced dangle in it
    until the next commit drops them.)"""
    table = IcebergTable(spark, name)
    report = Report(name)
    snapshots = spark.sql(
        f"select snapshot_id, parent_id, committed_at, operation, summary from {name}.snapshots "
        "order by committed_at"
    ).collect()
    digest_of: dict[int, str] = {}
    for s in snapshots:
        paths = read_paths(spark, name, s.snapshot_id)
        try:
            paths["pyiceberg scan(snapshot_id)"] = pyiceberg_rows(table, s.snapshot_id)
        except Exception as error:  # reported, e.g. a snapshot with equality deletes
            report.notes.append(f"pyiceberg cannot read {s.snapshot_id}: {error}")
        digests = {path: checksum(rows) for path, rows in paths.items()}
        counts = {len(rows) for rows in paths.values()}
        agree = len(set(digests.values())) == 1
        digest_of[s.snapshot_id] = next(iter(digests.values()))
        if s.operation == "replace" and s.parent_id in digest_of:
            same = digest_of[s.snapshot_id] == digest_of[s.parent_id]
            ok, detail = agree and same, f"rows {counts}, same rows as parent {s.parent_id}: {same}"
        else:
            records = int(s.summary.get("total-records", 0))
            live = records - int(s.summary.get("total-position-deletes", 0))
            ok, detail = agree and counts == {live}, f"rows {counts}, summary says {live}"
        report.add(f"snapshot {s.snapshot_id} ({s.operation})", " = ".join(digests), ok, detail)
    return report


# -- output ----------------------------------------------------------


def render(report: Report) -> str:
    width = max(len(c.what) for c in report.checks)
    lines = [f"time travel on {report.table}", ""]
    lines += [
        f"{'ok ' if c.ok else 'BAD'} {c.what:<{width}}  {c.path}"
        + (f"  [{c.detail}]" if c.detail else "")
        for c in report.checks
    ]
    lines += ["", *[f"note: {n}" for n in report.notes]]
    lines.append(f"\n{len(report.checks) - len(report.failed)}/{len(report.checks)} checks passed")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("verify-time-travel", __doc__)
    parser.add_argument("--target", default="local", help="whose SparkSession settings to use")
    parser.add_argument("--table", help="check this warehouse table instead of a scripted history")
    parser.add_argument("--json", type=Path, default=Path("results/verify_time_travel.json"))
    args = parser.parse_args(argv)
    from scripts.session import get_spark

    spark = get_spark(args.target)
    report = verify_existing(spark, args.table) if args.table else verify_scripted(spark)
    print(render(report))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "table": report.table,
                "notes": report.notes,
                "checks": [c.__dict__ for c in report.checks],
            },
            indent=2,
        )
    )
    print(f"{'FAILED' if report.failed else 'OK'}: results in {args.json}")
    return exit_code(report)


def exit_code(report: Report) -> int:
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
