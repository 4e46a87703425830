"""Recording the JVM class-data-sharing archive that embedded sessions map
(dbt/adapters/lakehouse/class_archive.py says how a JVM uses it, and why): once per
installation, by `lakehouse build` and `lakehouse test` (or `lakehouse class-archive`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dbt.adapters.lakehouse.class_archive import RECORD_ENV, archive_path

SMALLEST_ARCHIVE_BYTES = 20_000_000  # a Spark session's classes: about 200 MB

# What the recording process runs: the statements of a scheduled run's kinds (Iceberg DDL,
# writes, a merge with deletes, metadata tables, procedures, JSON parsing, a shuffle).
WORKLOAD = """
from scripts.session import get_spark
spark = get_spark("local")
spark.sql("create schema if not exists archive")
spark.sql('''create table archive.t (id bigint, day date, value string) using iceberg
             partitioned by (day) tblproperties ('format-version' = '2',
             'write.merge.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read')''')
spark.sql('''insert into archive.t select id, date_add(date'2026-01-01', cast(id % 3 as int)),
             to_json(named_struct('id', id)) from range(1000)''')
spark.sql('''merge into archive.t t using (select id, if(id % 2 = 0, 'D', 'U') as op
             from range(0, 1000, 7)) s on t.id = s.id
             when matched and s.op = 'D' then delete
             when matched then update set value = 'changed' ''')
spark.sql("alter table archive.t create branch if not exists audit")
spark.sql('''select day, count(*), max(from_json(value, 'map<string,string>')['id'])
             from archive.t group by day''').collect()
for metadata in ("snapshots", "files", "refs", "partitions"):
    spark.sql(f"select * from archive.t.{metadata}").collect()
spark.sql("call spark_catalog.system.rewrite_data_files(table => 'archive.t')").collect()
spark.sql("call spark_catalog.system.expire_snapshots(table => 'archive.t', retain_last => 1)")
spark.sql("create or replace view archive.v as select * from archive.t where id > 10")
spark.sql("describe table extended archive.v").collect()
print("JVM", spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid(), flush=True)
spark.stop()
"""


def process_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def build(log=print) -> Path | None:
    """Record the archive if this installation has none: a Spark session runs the workload
    in a process of its own and its JVM writes the archive as it exits (a minute at most).
    Returns the archive, or None (and says why) when it could not be made: nothing then
    changes but the start-up time."""
    from dbt.adapters.lakehouse.java_runtime import export_java_home
    from scripts.spark_config import environment_without_project_settings

    export_java_home()
    archive = archive_path()
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    for left in archive.parent.glob("*.partial-*"):  # of a recording that died
        if not Path(f"/proc/{left.name.rsplit('-', 1)[1]}").exists():
            left.unlink(missing_ok=True)
    partial = archive.with_name(f"{archive.name}.partial-{os.getpid()}")
    log(f"recording the JVM class archive {archive} (once per installation)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lakehouse-class-archive-") as scratch:
        env = environment_without_project_settings()
        env.update({RECORD_ENV: str(partial), "LAKEHOUSE_DATA_DIR": scratch})
        done = subprocess.run(
            [sys.executable, "-c", WORKLOAD],
            cwd=Path(__file__).resolve().parent.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    jvm = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("JVM ")]
    if done.returncode != 0 or not jvm or not process_gone(int(jvm[0]), timeout=120):
        partial.unlink(missing_ok=True)
        log(f"no class archive (start-up stays as it was): {done.stderr[-2000:]}")
        return None
    if not partial.is_file() or partial.stat().st_size < SMALLEST_ARCHIVE_BYTES:
        partial.unlink(missing_ok=True)
        log("no class archive: the JVM wrote none (start-up stays as it was)")
        return None
    partial.replace(archive)  # whole or not there: a JVM never maps half an archive
    size_mb = archive.stat().st_size / 1e6
    log(f"class archive recorded: {size_mb:.0f} MB in {time.monotonic() - started:.0f} s")
    return archive


if __name__ == "__main__":
    sys.exit(0 if build() else 1)
