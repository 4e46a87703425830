"""A dimension like dim_users__state (the dimension's state: live rows and tombstones), built
inside Spark, and a CDC batch merged into it as the project's incremental materialization
does it (dbt/include/lakehouse/macros/materializations/incremental/): the source's keys read
first and passed to the MERGE as literals. Shared by B2 and B5.

Tables are written from one deterministic plan, so two tables of the same size hold the
same rows in the same files' order whatever their write mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from scripts.bench.common import SCHEMA, BenchContext, drop_tables, snapshot_id, timed
from scripts.bench.scan_metrics import ScanCounter

COLUMNS = (
    "user_id, user_name, region, is_creator, user_level, registered_at, _change_op, "
    "_is_deleted, _source_lsn, _source_committed_at, _loaded_at"
)


KEY_LITERALS_LIMIT = 10_000  # the default of var('merge_key_literals_limit')


def rows_label(rows: int) -> str:
    return f"{rows // 1_000_000}M" if rows >= 1_000_000 else f"{rows // 1_000}k"


def create_dimension(
    ctx: BenchContext, name: str, rows: int, mode: str, buckets: int | None = None
) -> int:
    """dim_users__state's columns and the dimensions folder's properties, `write.*.mode` =
    `mode`, written ordered by key (the state models' write_order); with `buckets`,
    partitioned by bucket(buckets, user_id). Returns the snapshot holding the initial rows."""
    spark = ctx.spark
    spark.sql(f"create schema if not exists {SCHEMA}")
    drop_tables(spark, [name])
    spark.sql(f"""
        create table {name} (
            user_id bigint, user_name string, region string, is_creator boolean,
            user_level int, registered_at timestamp, _change_op string, _is_deleted boolean,
            _source_lsn bigint, _source_committed_at timestamp, _loaded_at timestamp
        )
        using iceberg
        {bucketed(buckets)}
        tblproperties (
            'format-version' = '2',
            'write.delete.mode' = '{mode}',
            'write.update.mode' = '{mode}',
            'write.merge.mode' = '{mode}',
            'write.parquet.compression-codec' = 'zstd',
            'write.target-file-size-bytes' = '134217728',
            'write.distribution-mode' = 'hash'
        )""")
    spark.sql(f"alter table {name} write ordered by user_id")
    spark.sql(f"insert into {name} {user_rows_sql(0, rows, 'insert', seed=0)}")
    return snapshot_id(spark, name)


def bucketed(buckets: int | None) -> str:
    return f"partitioned by (bucket({buckets}, user_id))" if buckets else ""


def user_rows_sql(first: int, count: int, op: str, seed: int, key_sql: str = "id + 1") -> str:
    """Rows of the users dimension for ids `key_sql` over range(first, first + count)."""
    return f"""
        select
            {key_sql} as user_id,
            concat('user_', {key_sql}, '_', pmod(hash({key_sql}, {seed}), 10000)) as user_name,
            element_at(array('cn-north', 'cn-south', 'cn-east', 'sg', 'us-west'),
                       cast(pmod(hash({key_sql}, {seed} + 1), 5) + 1 as int)) as region,
            pmod(hash({key_sql}, {seed} + 2), 10) = 0 as is_creator,
            cast(1 + pmod(hash({key_sql}, {seed} + 3), 59) as int) as user_level,
            timestamp'2023-01-01' + make_interval(0, 0, 0, 0, 0, 0,
                pmod(hash({key_sql}), 3 * 365 * 86400)) as registered_at,
            '{op}' as _change_op,
            {op == "delete"} as _is_deleted,
            cast(id + 1 as bigint) + {seed} * 100000000000 as _source_lsn,
            timestamp'2026-01-01' + make_interval(0, 0, 0, {seed}) as _source_committed_at,
            timestamp'2026-01-01' + make_interval(0, 0, 0, {seed}) as _loaded_at
        from range({first}, {first + count}, 1, 2)
    """


def create_changes(
    ctx: BenchContext, name: str, rows: int, changes: int, seed: int, buckets: int | None = None
) -> None:
    """A CDC batch as dim_users__state's model hands it to the merge (a delete is a tombstone
    row, merged like an update): 80% updates and 10% deletes of
    existing keys spread over the whole key range, 10% new keys. Stored once, so every
    merge of it reads the very same rows; with `buckets`, bucketed as the target is (what a
    storage-partitioned join needs)."""
    spark = ctx.spark
    drop_tables(spark, [name])
    inserts = max(1, changes // 10)
    deletes = max(1, changes // 10)
    updates = max(1, changes - inserts - deletes)
    existing = f"pmod(hash(id, {seed}), {rows}) + 1"
    # hashing may draw a key twice: keep one change per key, as the model does
    spark.sql(f"""
        create table {name} using iceberg {bucketed(buckets)} as
        select {COLUMNS} from (
            select *, row_number() over (partition by user_id order by _source_lsn desc)
                as change_rank
            from (
                {user_rows_sql(0, updates, "update", seed, key_sql=existing)}
                union all
                {user_rows_sql(updates, deletes, "delete", seed, key_sql=existing)}
                union all
                {user_rows_sql(rows, inserts, "insert", seed)}
            )
        ) where change_rank = 1""")


def merge_sql(spark, target: str, source: str) -> str:
    """What the incremental materialization runs for dim_users__state: it reads the source's
    keys, then merges with them as a literal predicate on the target."""
    rows = spark.sql(f"select distinct user_id from {source}").collect()
    keys = ", ".join(str(row[0]) for row in sorted(rows))
    # above the limit (var merge_key_literals_limit) the materialization passes no literals
    literal = len(rows) <= KEY_LITERALS_LIMIT
    in_keys = f"DBT_INTERNAL_DEST.user_id in ({keys}) and" if literal else ""
    return f"""
        merge into {target} as DBT_INTERNAL_DEST
        using {source} as DBT_INTERNAL_SOURCE
        on {in_keys} DBT_INTERNAL_SOURCE.user_id = DBT_INTERNAL_DEST.user_id
        when matched then update set *
        when not matched then insert *
    """


def read_sql(target: str) -> str:
    """A full read of the dimension's live rows, as dim_users (a view of the state) gives
    them to a join or export. Grouping keeps Iceberg from answering it from metadata
    (aggregate push-down), which only works without deletes."""
    return f"""
        select region, count(*) as users, sum(user_level) as levels,
               sum(hash(user_name)) as names
        from {target} where not _is_deleted group by region
    """


@dataclass(frozen=True)
class Merged:
    seconds: float  # wall time, the source keys' read included
    files: int  # the target's data files the merge's scans planned (after pruning)
    shuffles: int  # shuffle exchanges in the merge's plan (a storage-partitioned join has none)


def merged(ctx: BenchContext, target: str, source: str) -> Merged:
    """Merge `source` into `target` as the materialization does."""
    spark = ctx.spark
    with ScanCounter(spark) as scans:
        seconds = timed(lambda: spark.sql(merge_sql(spark, target, source)).collect())[0]
        files = scans.take()
    return Merged(
        seconds,
        sum(n for table, n in files.items() if table.endswith(target)),
        scans.take_shuffles(),
    )


# Storage-partitioned join: both sides bucketed alike join bucket by bucket, without a shuffle
# (Iceberg's docs, "Storage Partitioned Join"). Runtime SQL settings, set for one merge.
SPJ_SETTINGS = {
    "spark.sql.sources.v2.bucketing.enabled": "true",
    "spark.sql.sources.v2.bucketing.pushPartValues.enabled": "true",
    "spark.sql.iceberg.planning.preserve-data-grouping": "true",
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    "spark.sql.sources.v2.bucketing.partiallyClusteredDistribution.enabled": "true",
}


@contextmanager
def storage_partitioned_join(spark) -> Iterator[None]:
    saved = {key: spark.conf.get(key, None) for key in SPJ_SETTINGS}
    for key, value in SPJ_SETTINGS.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
