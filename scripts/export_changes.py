"""Export what changed in an Iceberg table between two snapshots: inserts, updates (before and
after images) and deletes, one JSON line each, for a downstream push.

Iceberg's incremental read returns only appended rows and silently skips overwrite and delete
snapshots (verify-time-travel shows it), and Spark's create_changelog_view ignores delete
files, so neither fits merge-on-read dimensions. This compares the two snapshots' rows by
key instead: a key only in the later one is an insert, only in the earlier one a delete, in
both with any column different an update. Compactions and other rewrites change no row, so
they export nothing; every write mode and delete file is covered, because only the rows
themselves are compared.

A consumer keeps the snapshot it last exported up to and resumes from it:

    export-changes --table dwd.dim_users__state --key user_id --out all.jsonl
    export-changes --table dwd.dim_users__state --key user_id --from-snapshot 8410... \
        --out next.jsonl

The last line printed (and `--state` file) is the snapshot to resume from. Without
--from-snapshot every row of --to-snapshot (default: current) is an insert (a first full
export). A --from-snapshot that expired fails with a clear error: restart with a full export.
Reads both snapshots whole (Iceberg cannot prune by `_file`): its cost follows the table.
For a copy-on-write table (the facts, DWS) --changed-files reads only the data files the
commits between the two snapshots removed and added (Iceberg's changelog scan).

A dimension has a changelog its runs append to (dwd.dim_users__changes): with --changelog the
export reads only the rows appended between the two changelog snapshots, by Iceberg's
incremental append read (only its new files: its cost follows the change, not the table):

    export-changes --changelog dwd.dim_users__changes --out all.jsonl --state users.snapshot
    export-changes --changelog dwd.dim_users__changes --from-snapshot 8410... --out next.jsonl

Without --from-snapshot it is the whole changelog, whose replay is the dimension.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import expr

from scripts.cli import parser_from_doc

CHANGE_TYPES = ("insert", "update_before", "update_after", "delete")


class ExpiredSnapshot(Exception):
    """The snapshot a consumer resumes from is no longer in the table's history."""


def current_snapshot(spark: SparkSession, table: str) -> int | None:
    """The head of `main` (snapshots' commit times can tie within a millisecond)."""
    row = spark.sql(f"select snapshot_id from {table}.refs where name = 'main'").first()
    return row[0] if row else None


def require_snapshot(spark: SparkSession, table: str, snapshot: int) -> None:
    known = spark.sql(f"select 1 from {table}.snapshots where snapshot_id = {int(snapshot)}")
    if not known.count():
        raise ExpiredSnapshot(
            f"snapshot {snapshot} of {table} is no longer in its history (expired by "
            "expire_snapshots, or never a snapshot of it): changes since then cannot be read. "
            "Restart the consumer with a full export (no --from-snapshot)."
        )


def changes(
    spark: SparkSession, table: str, key: list[str], start: int | None, end: int
) -> DataFrame:
    """The changes from snapshot `start` (exclusive; None: empty table) to `end`, as rows of
    the table with `_change_type`, ordered deletes and before images first per key."""
    require_snapshot(spark, table, end)
    after = spark.sql(f"select * from {table} version as of {int(end)}")
    if start is None:
        before = spark.createDataFrame([], after.schema)
    else:
        require_snapshot(spark, table, start)
        before = spark.sql(f"select * from {table} version as of {int(start)}")
    columns = after.columns
    before.createOrReplaceTempView("changes_before")
    after.createOrReplaceTempView("changes_after")
    on = " and ".join(f"b.`{k}` <=> a.`{k}`" for k in key)
    row = ", ".join(f"`{c}`" for c in columns)
    differs = " or ".join(f"not (b.`{c}` <=> a.`{c}`)" for c in columns)
    spark.sql(f"""
        select
            case
                when a.`{key[0]}` is null then 'delete'
                when b.`{key[0]}` is null then 'insert'
                else 'update'
            end as kind,
            struct(b.*) as before_row,
            struct(a.*) as after_row
        from changes_before b full outer join changes_after a on {on}
        where a.`{key[0]}` is null or b.`{key[0]}` is null or {differs}
    """).createOrReplaceTempView("changes_joined")
    return spark.sql(f"""
        select _change_type, {row} from (
            select 'delete' as _change_type, 0 as _image, before_row.* from changes_joined
            where kind = 'delete'
            union all
            select 'update_before', 0, before_row.* from changes_joined where kind = 'update'
            union all
            select 'update_after', 1, after_row.* from changes_joined where kind = 'update'
            union all
            select 'insert', 1, after_row.* from changes_joined where kind = 'insert'
        )
        order by {", ".join(f"`{k}`" for k in key)}, _image
    """)


def changed_file_changes(
    spark: SparkSession, table: str, key: list[str], start: int, end: int
) -> DataFrame:
    """The changes from `start` (exclusive) to `end` of a copy-on-write table, from Iceberg's
    changelog scan: it reads only the data files the commits between them removed and
    added, skips compactions (replace snapshots), pairs a removed and an added row of one key
    into update images and drops a row removed and added unchanged (a day rewritten with the
    same rows). Per commit, in commit order: applied in order they give the same state as the
    comparison. A merge-on-read table's deletes are delete files, which the scan refuses."""
    require_snapshot(spark, table, end)
    require_snapshot(spark, table, start)
    view = f"export_changes_{int(start)}_{int(end)}".replace("-", "m")
    keys = ", ".join(f"'{k}'" for k in key)
    try:
        spark.sql(f"""
            call spark_catalog.system.create_changelog_view(
                table => '{table}',
                options => map('start-snapshot-id', '{int(start)}',
                               'end-snapshot-id', '{int(end)}'),
                changelog_view => '{view}',
                identifier_columns => array({keys}),
                compute_updates => true)""")
        scan_columns = {"_change_type", "_change_ordinal", "_commit_snapshot_id"}
        columns = [c for c in spark.table(view).columns if c not in scan_columns]
        rows = spark.sql(f"""
            select lower(_change_type) as _change_type, {", ".join(f"`{c}`" for c in columns)}
            from {view}
            order by _change_ordinal, {", ".join(f"`{k}`" for k in key)},
                _change_type in ('insert', 'update_after')""")
        rows.count()  # the scan refuses delete files when it plans: here, not mid-export
    except Exception as error:
        if "Delete files are currently not supported" not in str(error):
            raise
        raise ValueError(
            f"{table} has delete files between snapshots {start} and {end} (merge-on-read): "
            "Iceberg's changelog scan cannot read them. Export it without --changed-files "
            "(comparing the snapshots), or from its changelog if it has one."
        ) from None
    return rows


def changelog_rows(spark: SparkSession, changelog: str, start: int | None, end: int) -> DataFrame:
    """The changelog's rows appended after snapshot `start` (exclusive; None: from the start)
    up to `end`. Append-only, so Iceberg's incremental append read is exact: it reads the
    files the appends between the two added, and skips a compaction's."""
    require_snapshot(spark, changelog, end)
    if start is None:
        return spark.sql(f"select * from {changelog} version as of {int(end)}")
    if start == end:
        return spark.sql(f"select * from {changelog} version as of {int(end)} where false")
    require_snapshot(spark, changelog, start)
    return (
        spark.read.format("iceberg")
        .option("start-snapshot-id", str(start))
        .option("end-snapshot-id", str(end))
        .load(changelog)
    )


def changelog_changes(
    spark: SparkSession, changelog: str, start: int | None, end: int
) -> DataFrame:
    """changelog_rows in replay order: by commit, key, and before images first."""
    rows = changelog_rows(spark, changelog, start, end)
    image_order = "case _change_type when 'delete' then 0 when 'update_before' then 1 else 2 end"
    key = rows.columns[1]  # the dimension's key follows _change_type (dimension_changes)
    return rows.orderBy("_change_seq", key, expr(image_order))


def export(
    spark: SparkSession,
    table: str,
    key: list[str],
    out: Path,
    start: int | None = None,
    end: int | None = None,
    changed_files: bool = False,
) -> tuple[int, dict[str, int]]:
    """Write the changes as JSON lines to `out`; returns the snapshot exported up to (resume
    from it) and the count per change type. `changed_files`: a copy-on-write table's changes
    read from the files its commits changed (changed_file_changes), not both snapshots."""
    end = _end(spark, table, end)
    if changed_files and start is not None:
        rows = changed_file_changes(spark, table, key, start, end)
    else:
        rows = changes(spark, table, key, start, end)
    return end, write_changes(rows, out)


def export_changelog(
    spark: SparkSession, changelog: str, out: Path, start: int | None = None, end: int | None = None
) -> tuple[int, dict[str, int]]:
    """The same from a dimension's changelog: only what was appended between the two."""
    end = _end(spark, changelog, end)
    try:
        return end, write_changes(changelog_changes(spark, changelog, start, end), out)
    except Exception as error:
        if "is not a parent ancestor" not in str(error):
            raise
        raise ExpiredSnapshot(
            f"snapshot {start} is not in the history of {changelog}'s snapshot {end}: the "
            "changelog was replaced (a changelog is never rebuilt by --full-refresh; was it "
            "dropped?). Restart the consumer with a full export (no --from-snapshot)."
        ) from None


def _end(spark: SparkSession, table: str, end: int | None) -> int:
    end = end if end is not None else current_snapshot(spark, table)
    if end is None:
        raise ExpiredSnapshot(f"{table} has no snapshot yet: nothing to export")
    return end


def write_changes(rows: DataFrame, out: Path) -> dict[str, int]:
    """One JSON line per change, in order; the count per change type."""
    counts = dict.fromkeys(CHANGE_TYPES, 0)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as lines:
        for row in rows.toLocalIterator():
            record = row.asDict()
            counts[record["_change_type"]] += 1
            lines.write(json.dumps(record, default=str) + "\n")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("export-changes", __doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--table", help="compare two snapshots, e.g. dwd.dim_users__state")
    source.add_argument("--changelog", help="read a changelog, e.g. dwd.dim_users__changes")
    parser.add_argument("--key", help="--table's unique key column(s), comma separated")
    parser.add_argument(
        "--changed-files",
        action="store_true",
        help="--table is copy-on-write: read only the files its commits changed",
    )
    parser.add_argument("--from-snapshot", type=int, help="last snapshot exported (exclusive)")
    parser.add_argument("--to-snapshot", type=int, help="default: the current snapshot")
    parser.add_argument("--out", type=Path, required=True, help="JSON lines file to write")
    parser.add_argument("--state", type=Path, help="file to write the snapshot to resume from")
    parser.add_argument("--target", default="local", help="whose SparkSession settings to use")
    args = parser.parse_args(argv)
    from scripts.session import get_spark

    spark = get_spark(args.target)
    key = [k.strip() for k in (args.key or "").split(",") if k.strip()]
    if args.table and not key:
        parser.error("--table needs --key")
    try:
        if args.changelog:
            end, counts = export_changelog(
                spark, args.changelog, args.out, args.from_snapshot, args.to_snapshot
            )
        else:
            end, counts = export(
                spark, args.table, key, args.out, args.from_snapshot, args.to_snapshot,
                changed_files=args.changed_files,
            )  # fmt: skip
    except (ExpiredSnapshot, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(", ".join(f"{kind} {n}" for kind, n in counts.items()) + f" -> {args.out}")
    if args.state:
        args.state.write_text(f"{end}\n")
    print(f"resume from snapshot {end}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
