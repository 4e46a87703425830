"""The limit B9 measures the scheduled dbt build against: one hand-written PySpark job doing
the same work on the same landed batch, as an engineer would write it for speed.

Per run: ODS appends every line of the batch's files (file, line, raw line, the record's
source partition and offset, whether an earlier load or line already delivered that offset,
load id); DWD parses each event once, types and validates it by the project's rules
(unparseable, redelivered, missing or empty id, keys, type, arrival, too far ahead, too old),
quarantines re-sent copies of an event (within the batch and against the detail's days a new
event can fall in) and appends the valid ones, the rest to a quarantine with a reason; each
dimension quarantines changes it cannot apply (unparseable, redelivered, unknown op, missing
key) and merges the newest change per key (deletes kept as tombstones); both DWS aggregates
overwrite the days the new events touched. One commit per table (the quarantine: one per
source), no tests, no publish, no maintenance, no SCD-2 history: what dbt adds on top is
what B9 measures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

EVENT_TYPES = ["impression", "play", "like", "share", "comment", "follow"]
EVENT_SCHEMA = (
    "event_id string, user_id string, video_id string, event_type string, event_at string,"
    " watch_ms string, video_duration_ms string, _ingested_at string, _corrupt_record string"
)
# a line that is no JSON object keeps its text here (every other field null)
PERMISSIVE = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
CHANGE_OPS = ["+I", "+U", "-U", "-D"]
CHANGELOGS = {  # landing folder -> (key, dimension columns and their types)
    "appdb_users": (
        "user_id",
        "user_name string, region string, is_creator boolean, level int, registered_at string",
    ),
    "appdb_videos": (
        "video_id",
        "author_user_id bigint, title string, category string, duration_ms bigint,"
        " published_at string",
    ),
}
LATENESS_DAYS = 30
SKEW_HOURS = 24


class HandwrittenJob:
    """`loaded`: the id of the last load the job's tables hold (the scheduler passes it)."""

    def __init__(self, spark: SparkSession, landing: Path, prefix: str, loaded: int = 0) -> None:
        self.spark, self.landing, self.prefix = spark, landing, prefix
        self.load_id = loaded

    def table(self, name: str) -> str:
        return f"{self.prefix}job.{name}"

    def exists(self, name: str) -> bool:
        return self.spark.catalog.tableExists(self.table(name))

    def write(self, frame: DataFrame, name: str, partitioned_by: str | None = None) -> None:
        """Append, creating the table on the first run (one commit either way)."""
        if self.exists(name):
            frame.writeTo(self.table(name)).append()
            return
        writer = frame.writeTo(self.table(name)).using("iceberg")
        if partitioned_by:
            writer = writer.partitionedBy(F.col(partitioned_by))
        writer.tableProperty("format-version", "2").create()

    def run(self, batches: list[int]) -> None:
        self.spark.sql(f"create schema if not exists {self.prefix}job")
        self.load_id += 1
        events = self.ods("client_events", batches)
        self.detail(events)
        for source, (key, columns) in CHANGELOGS.items():
            self.dimension(self.ods(source, batches), source, key, columns)
        events.unpersist()

    def ods(self, source: str, batches: list[int]) -> DataFrame:
        """The batch's lines, appended to ODS, kept in memory for the layers below. A line
        whose source offset an earlier load, or an earlier line of this one, delivered is a
        redelivery (the earlier loads read only from the lowest new offset per partition)."""
        paths = [str(self.landing / source / f"batch={b:06d}" / "*.jsonl") for b in batches]
        read = (
            self.spark.read.option("wholetext", True)
            .text(paths)
            .select(
                F.col("_metadata.file_path").alias("_source_file"),
                F.posexplode(F.split("value", "\n")).alias("position", "_raw_line"),
            )
            .where(F.col("_raw_line") != "")
            .select(
                "_source_file",
                (F.col("position") + 1).alias("_source_line"),
                "_raw_line",
                F.get_json_object("_raw_line", "$._kafka_partition")
                .cast("int")
                .alias("_source_partition"),
                F.get_json_object("_raw_line", "$._kafka_offset")
                .cast("bigint")
                .alias("_source_offset"),
                F.lit(self.load_id).cast("bigint").alias("_load_id"),
            )
        )
        offset = ("_source_partition", "_source_offset")
        first = Window.partitionBy(*offset).orderBy("_source_file", "_source_line")
        identified = F.col("_source_partition").isNotNull() & F.col("_source_offset").isNotNull()
        read = read.withColumn(
            "_is_redelivery", identified & (F.row_number().over(first) > 1)
        ).persist()  # the files are read and split once
        lines = read
        if self.exists(f"ods_{source}"):
            lowest = read.groupBy("_source_partition").agg(F.min("_source_offset").alias("low"))
            # pinned to the snapshot before this load's append: a recomputed partition of
            # `lines` must not meet its own rows
            before = self.spark.sql(
                f"select snapshot_id from {self.table(f'ods_{source}')}.refs where name = 'main'"
            ).first()[0]
            earlier = (
                self.spark.read.option("snapshot-id", before)
                .table(self.table(f"ods_{source}"))
                .join(F.broadcast(lowest), "_source_partition")
                .where(F.col("_source_offset") >= F.col("low"))
                .select(*offset)
                .distinct()
                .withColumn("delivered_before", F.lit(True))
            )
            lines = (
                read.join(earlier, list(offset), "left")
                .withColumn(
                    "_is_redelivery",
                    F.col("_is_redelivery") | F.col("delivered_before").isNotNull(),
                )
                .drop("delivered_before")
                .persist()
            )
        self.write(lines, f"ods_{source}")
        if lines is not read:
            read.unpersist()
        return lines

    def quarantine(self, rejected: DataFrame, source: str) -> None:
        self.write(
            rejected.select(
                "reject_reason",
                F.lit(source).alias("source_table"),
                "_raw_line",
                "_source_file",
                "_source_line",
                "_load_id",
            ),
            "dwd_quarantine__rejected_records",
        )

    def detail(self, lines: DataFrame) -> None:
        event = F.from_json("_raw_line", EVENT_SCHEMA, PERMISSIVE)
        typed = lines.select(
            "_source_file",
            "_source_line",
            "_raw_line",
            "_load_id",
            "_is_redelivery",
            event.alias("e"),
        ).select(
            "_source_file",
            "_source_line",
            "_raw_line",
            "_load_id",
            "_is_redelivery",
            F.col("e._corrupt_record").isNotNull().alias("is_unparseable"),
            F.nullif(F.trim("e.event_id"), F.lit("")).alias("event_id"),
            F.col("e.user_id").cast("bigint").alias("user_id"),
            F.col("e.video_id").cast("bigint").alias("video_id"),
            F.lower(F.trim("e.event_type")).alias("event_type"),
            F.to_timestamp("e.event_at").alias("event_at"),
            F.to_timestamp("e._ingested_at").alias("ingested_at"),
            F.col("e.watch_ms").cast("bigint").alias("watch_ms"),
            F.col("e.video_duration_ms").cast("bigint").alias("video_duration_ms"),
        )
        reason = (
            F.when(F.col("is_unparseable"), "unparseable_record")
            .when(F.col("_is_redelivery"), "redelivered_record")
            .when(F.col("event_id").isNull(), "missing_event_id")
            .when(F.col("user_id").isNull() | F.col("video_id").isNull(), "missing_key")
            .when(
                ~F.coalesce(F.col("event_type").isin(EVENT_TYPES), F.lit(False)),
                "unknown_event_type",
            )
            .when(F.col("ingested_at").isNull() | F.col("event_at").isNull(), "invalid_time")
            .when(
                F.col("event_at") > F.col("ingested_at") + F.expr(f"interval {SKEW_HOURS} hours"),
                "event_at_in_future",
            )
            .when(
                F.col("event_at") < F.col("ingested_at") - F.expr(f"interval {LATENESS_DAYS} days"),
                "event_at_too_old",
            )
        )
        arrival = ("ingested_at", "_source_file", "_source_line")
        first = Window.partitionBy("event_id").orderBy(*arrival)
        checked = typed.withColumn("reject_reason", reason).withColumn(
            "copy", F.when(F.col("reject_reason").isNull(), F.row_number().over(first))
        )
        valid = checked.where("reject_reason is null and copy = 1").withColumn(
            "event_date", F.to_date("event_at")
        )
        resent = None  # copies of events an earlier load accepted: quarantined below
        if self.exists("dwd_client__events"):
            oldest = valid.agg(F.min("event_date")).first()[0]
            if oldest is not None:
                # pinned to the snapshot before this load's append (read again for the
                # quarantine after it)
                before = self.spark.sql(
                    f"select snapshot_id from {self.table('dwd_client__events')}.refs"
                    " where name = 'main'"
                ).first()[0]
                earlier = (
                    self.spark.read.option("snapshot-id", before)
                    .table(self.table("dwd_client__events"))
                    .where(F.col("event_date") >= F.lit(oldest))
                    .select("event_id", F.lit(True).alias("accepted_before"))
                )
                valid = valid.join(earlier, "event_id", "left").persist()
                resent = valid.where("accepted_before")
                valid = valid.where("accepted_before is null")
        detail = valid.select(
            "event_id",
            "user_id",
            "video_id",
            "event_type",
            "event_at",
            "event_date",
            "watch_ms",
            (
                (F.col("event_type") == "play")
                & (F.col("watch_ms") >= F.col("video_duration_ms") * 0.9)
            ).alias("is_completed_play"),
            "_source_file",
            "_source_line",
            "_load_id",
        ).persist()
        self.write(detail, "dwd_client__events", partitioned_by="event_date")
        rejected = checked.where("reject_reason is not null or copy > 1").select(
            F.coalesce("reject_reason", F.lit("duplicate_event_id")).alias("reject_reason"),
            "_raw_line",
            "_source_file",
            "_source_line",
            "_load_id",
        )
        if resent is not None:
            rejected = rejected.unionByName(
                resent.select(
                    F.lit("duplicate_event_id").alias("reject_reason"),
                    "_raw_line",
                    "_source_file",
                    "_source_line",
                    "_load_id",
                )
            )
        self.quarantine(rejected, "client_events")
        self.daily(detail)
        detail.unpersist()
        if resent is not None:
            valid.unpersist()

    def daily(self, new_events: DataFrame) -> None:
        """Both aggregates, recomputed for the days the new events touched."""
        days = [row[0] for row in new_events.select("event_date").distinct().collect()]
        if not days:
            return
        events = self.spark.table(self.table("dwd_client__events")).where(
            F.col("event_date").isin(days)
        )
        play = F.col("event_type") == "play"
        aggregates = {
            "dws_video__daily": events.groupBy("video_id", "event_date").agg(
                F.count_if(F.col("event_type") == "impression").alias("impression_count"),
                F.count_if(play).alias("play_count"),
                F.countDistinct(F.when(play, F.col("user_id"))).alias("unique_viewers"),
                F.coalesce(F.sum(F.when(play, F.col("watch_ms"))), F.lit(0)).alias("watch_ms"),
                F.count_if(F.col("is_completed_play")).alias("completed_play_count"),
            ),
            "dws_user__daily": events.groupBy("user_id", "event_date").agg(
                F.count("*").alias("event_count"),
                F.count_if(play).alias("play_count"),
                F.countDistinct(F.when(play, F.col("video_id"))).alias("videos_played"),
                F.min("event_at").alias("first_event_at"),
                F.max("event_at").alias("last_event_at"),
            ),
        }
        for name, frame in aggregates.items():
            if self.exists(name):
                frame.writeTo(self.table(name)).overwritePartitions()
            else:
                self.write(frame, name, partitioned_by="event_date")

    def dimension(self, lines: DataFrame, source: str, key: str, columns: str) -> None:
        """The newest change per key merged into the state; a delete is a tombstone."""
        schema = f"op string, {key} bigint, _source_lsn bigint, {columns}, _corrupt_record string"
        change = F.from_json("_raw_line", schema, PERMISSIVE)
        parsed = (
            lines.select(
                change.alias("c"),
                "_raw_line",
                "_source_file",
                "_source_line",
                "_load_id",
                "_is_redelivery",
            )
            .withColumn(
                "reject_reason",
                F.when(F.col("c._corrupt_record").isNotNull(), "unparseable_record")
                .when(F.col("_is_redelivery"), "redelivered_record")
                .when(
                    ~F.coalesce(F.col("c.op").isin(CHANGE_OPS), F.lit(False)), "unknown_change_op"
                )
                .when(F.col(f"c.{key}").isNull(), "missing_key")
                .when(F.col("c._source_lsn").isNull(), "invalid_source_lsn"),
            )
            .persist()
        )
        self.quarantine(parsed.where("reject_reason is not null"), source)
        # a before-image (-U) changes no state
        changes = (
            parsed.where("reject_reason is null and c.op != '-U'")
            .select("c.*", "_load_id")
            .drop("_corrupt_record")
        )
        newest = Window.partitionBy(key).orderBy(F.col("_source_lsn").desc())
        latest = (
            changes.withColumn("rank", F.row_number().over(newest))
            .where("rank = 1")
            .drop("rank")
            .withColumn("is_deleted", F.col("op") == "-D")
        )
        name = f"dim_{source.removeprefix('appdb_')}__state"
        if not self.exists(name):
            self.write(latest, name)
            parsed.unpersist()
            lines.unpersist()
            return
        latest.createOrReplaceTempView(f"{name}_changes")
        self.spark.sql(f"""
            merge into {self.table(name)} as state using {name}_changes as change
            on state.{key} = change.{key}
            when matched and change._source_lsn > state._source_lsn then update set *
            when not matched then insert *""")
        parsed.unpersist()
        lines.unpersist()


def main(argv: list[str] | None = None) -> int:
    """The job as its own process, as a scheduler runs it: its session (the embedded target's
    settings, data folder from LAKEHOUSE_DATA_DIR), one run, the session stopped."""
    parser = argparse.ArgumentParser(description="B9's hand-written job: one run")
    parser.add_argument("--landing", type=Path, required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--batches", type=int, nargs="+", required=True)
    parser.add_argument("--loaded", type=int, default=0, help="the last load's id")
    parser.add_argument("--target", default="local")
    args = parser.parse_args(argv)
    from scripts.session import get_spark

    spark = get_spark(args.target)
    HandwrittenJob(spark, args.landing, args.prefix, args.loaded).run(args.batches)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
