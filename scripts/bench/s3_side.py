"""B11's object-storage side: scheduled builds of the `s3` target in a process of its own
(a JVM has one spark_catalog, and the benchmark's own is the local one), driven line by line.

stdin   `build N`: land batches 1..N into the target's landing bucket (existing batches are
        kept; same seed and scale as the local side, so the same bytes), then `dbt build`
        in this process; `quit` ends it
stdout  `RESULT {"seconds", "success", "requests"}` per build: wall time, and the S3
        requests S3A sent during it, by type (the statistics of its file systems)

The scale is the JSON of B11_SCALE (Scale's fields), the seed B11_SEED; the services, keys
and data folder come from the environment like any process of the target.
"""

from __future__ import annotations

import json
import os
import sys
import time

from scripts.generate_landing import LandingGenerator, Scale

# S3A's counters of requests (hadoop-aws 3.3) -> the request types S3 bills. Its other
# counters are bytes, durations, retries and its own calls, not requests (HEADs are counted
# twice, as object_metadata_request and action_http_head_request: the first is kept).
REQUEST_TYPES = {
    "action_http_get_request": "GET",
    "object_metadata_request": "HEAD",
    "object_list_request": "LIST",
    "object_continue_list_request": "LIST",
    "object_put_request": "PUT",
    "object_copy_requests": "COPY",
    "object_multipart_initiated": "POST",
    "object_multipart_aborted": "DELETE",
    "object_delete_request": "DELETE",
    "object_bulk_delete_request": "DELETE",
}


def s3a_requests(spark) -> dict[str, int]:
    """Requests S3A sent so far in this JVM, by type. Every S3A file system of a JVM (one per
    bucket) counts into one S3AStorageStatistics of Hadoop's global registry: read it once."""
    jvm = spark.sparkContext._jvm
    shared = jvm.org.apache.hadoop.fs.FileSystem.getGlobalStorageStatistics().get(
        "S3AStorageStatistics"
    )
    totals: dict[str, int] = dict.fromkeys(sorted(set(REQUEST_TYPES.values())), 0)
    if shared is None:  # no S3A file system yet
        return totals
    statistics = shared.getLongStatistics()
    while statistics.hasNext():
        statistic = statistics.next()
        kind = REQUEST_TYPES.get(statistic.getName())
        if kind:
            totals[kind] += int(statistic.getValue())
    return totals


def build(spark, batches: int, scale: Scale, seed: int) -> dict:
    from dbt.cli.main import dbtRunner

    from scripts.spark_config import DataPaths

    data = DataPaths.for_target("s3")
    scale = Scale(**{**scale.__dict__, "batches": batches})
    LandingGenerator(data.root, seed, scale, landing=data.landing).run(log=lambda _: None)
    before = s3a_requests(spark)
    started = time.perf_counter()
    result = dbtRunner().invoke(["build", "--target", "s3", "--quiet"])
    seconds = time.perf_counter() - started
    after = s3a_requests(spark)
    requests = {kind: after.get(kind, 0) - before.get(kind, 0) for kind in after}
    return {"seconds": seconds, "success": bool(result.success), "requests": requests}


def main() -> int:
    from scripts.session import get_spark
    from scripts.spark_config import PROJECT_DIR, dbt_env

    scale = Scale(**json.loads(os.environ["B11_SCALE"]))
    seed = int(os.environ["B11_SEED"])
    os.environ.update(dbt_env("s3"))
    os.chdir(PROJECT_DIR)
    spark = get_spark("s3")
    for line in sys.stdin:
        command = line.split()
        if command[:1] == ["quit"]:
            break
        if command[:1] == ["build"]:
            report = build(spark, int(command[1]), scale, seed)
            print("RESULT " + json.dumps(report), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
