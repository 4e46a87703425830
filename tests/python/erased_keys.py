"""Where erased subjects still appear: every Parquet file under a warehouse, read directly with
pyarrow (no Spark, no Iceberg metadata: a file no snapshot references is read too), and every
snapshot and ref of every table through Spark's time travel."""

from __future__ import annotations

import re
from collections.abc import Iterable

import pyarrow.fs as pafs
import pyarrow.parquet as pq

# typed columns that hold a user, and raw JSON text columns whose fields may
SUBJECT_COLUMNS = ("user_id", "author_user_id")
RAW_COLUMNS = ("_raw_line", "raw_record")


def written_pattern(subjects: Iterable[str]) -> re.Pattern:
    """A subject field written with an erased id, parsed or not (erasure.py's rule too)."""
    ids = "|".join(re.escape(str(s)) for s in subjects)
    fields = "|".join(SUBJECT_COLUMNS)
    return re.compile(rf'"({fields})"\s*:\s*"?({ids})("|\s*[,}}]|\s*$)')


def parquet_hits(
    filesystem: pafs.FileSystem, root: str, subjects: Iterable[str]
) -> tuple[int, list[str]]:
    """(Parquet files read under `root`, 'file: column = value' for each erased subject found)."""
    subjects = {str(s) for s in subjects}
    written = written_pattern(subjects)
    infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True))
    files = [i.path for i in infos if i.type == pafs.FileType.File and i.path.endswith(".parquet")]
    hits = []
    for path in files:
        with filesystem.open_input_file(path) as source:
            table = pq.read_table(source)
        for name in table.column_names:
            if name in SUBJECT_COLUMNS:
                found = {str(v) for v in table.column(name).to_pylist() if v is not None}
                hits += [f"{path}: {name} = {v}" for v in sorted(found & subjects)]
            elif name in RAW_COLUMNS:
                for text in table.column(name).to_pylist():
                    if text is not None and written.search(text):
                        hits.append(f"{path}: {name} = {text[:120]}")
    return len(files), hits


def snapshot_hits(
    spark, tables: Iterable[str], subjects: Iterable[str], refs: bool = True
) -> tuple[int, list[str]]:
    """(snapshots and refs read, 'table@version: rows' wherever a subject is found) for each
    table, reading each of its snapshots and refs (tags and branches) by time travel; only
    its current state when not `refs`."""
    subjects = [str(s) for s in subjects]
    ids = ", ".join(f"'{s}'" for s in subjects)
    pattern = written_pattern(subjects).pattern.replace("\\", "\\\\").replace("'", "\\'")
    read, hits = 0, []
    for table in tables:
        columns = set(spark.table(table).columns)
        conditions = [f"cast({c} as string) in ({ids})" for c in SUBJECT_COLUMNS if c in columns]
        conditions += [f"{c} rlike '{pattern}'" for c in RAW_COLUMNS if c in columns]
        if not conditions:  # an aggregate without a subject column (compared with the truth)
            continue
        versions = ["'main'"]
        if refs:
            snapshots = spark.sql(f"select snapshot_id from {table}.snapshots").collect()
            versions = [str(r[0]) for r in snapshots]
            versions += [f"'{r[0]}'" for r in spark.sql(f"select name from {table}.refs").collect()]
        for version in versions:
            rows = spark.sql(
                f"select count(*) from {table} version as of {version}"
                f" where {' or '.join(conditions)}"
            ).first()[0]
            read += 1
            if rows:
                hits.append(f"{table}@{version}: {rows} rows")
    return read, hits
