"""A fresh process from `get_spark()` may start with any statement: here, reading an Iceberg
metadata table before any plain table access (it used to fail to reach the metastore). And it
commits although the process before it died holding a metastore lock (a run killed while it
committed: the rerun waited on that lock for minutes per try). And this run's JVM started
from the project's class archive."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from scripts.spark_config import PROJECT_DIR

CREATE = """
from scripts.session import get_spark
spark = get_spark("ci")
spark.sql("create schema if not exists fresh")
spark.sql("create table fresh.events (id int) using iceberg")
spark.sql("insert into fresh.events values (1)")

# die holding the table's commit lock, as a run killed inside an Iceberg commit does: the
# lock Iceberg's HiveTableOperations takes, through the same metastore client API
from py4j.java_collections import ListConverter
jvm = spark.sparkContext._jvm
api = jvm.org.apache.hadoop.hive.metastore.api
conf = jvm.org.apache.hadoop.hive.conf.HiveConf()
url_key = "javax.jdo.option.ConnectionURL"
conf.set(url_key, spark.conf.get("spark.hadoop." + url_key))
component = api.LockComponent(api.LockType.EXCLUSIVE, api.LockLevel.TABLE, "fresh")
component.setTablename("events")
components = ListConverter().convert([component], spark.sparkContext._gateway._gateway_client)
client = jvm.org.apache.hadoop.hive.metastore.HiveMetaStoreClient(conf)
response = client.lock(api.LockRequest(components, "killed-run", "localhost"))
print("lock:", response.getState().toString(), flush=True)
import os
import re
os._exit(0)  # no unlock, no close: what SIGKILL leaves
"""

READ_METADATA_FIRST = """
from scripts.session import get_spark
spark = get_spark("ci")
print("snapshots:", spark.sql("select * from fresh.events.snapshots").count())
print("refs:", spark.sql("select name from fresh.events.refs").first().name)
spark.sql("insert into fresh.events values (2)")  # a commit: it takes the table's lock
print("rows:", spark.table("fresh.events").count())
"""


def run_fresh(code: str, data_dir: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """A new Python process (so a new JVM and metastore client) on its own data folder."""
    location = ("LAKEHOUSE_WAREHOUSE_DIR", "LAKEHOUSE_METASTORE_DIR", "LAKEHOUSE_LANDING_DIR")
    env = {name: value for name, value in os.environ.items() if name not in location}
    env["LAKEHOUSE_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_fresh_session_reads_a_metadata_table_first_and_commits_past_a_dead_lock(tmp_path):
    created = run_fresh(CREATE, tmp_path)
    assert created.returncode == 0, created.stderr[-3000:]
    assert "lock: ACQUIRED" in created.stdout, created.stdout
    # a session waiting on the dead lock would take minutes per commit try: past the timeout
    read = run_fresh(READ_METADATA_FIRST, tmp_path, timeout=150)
    assert read.returncode == 0, read.stderr[-3000:]
    assert "snapshots: 1" in read.stdout
    assert "refs: main" in read.stdout
    assert "metastore: released 1 lock(s) left by a process that is gone" in read.stdout
    assert "rows: 2" in read.stdout


def process_state(pid: int) -> str:
    """The state letter of /proc/<pid>/stat ("pid (name) S ...")."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_a_lock_holder_gone_or_a_zombie_is_gone_a_live_one_is_not(spark):
    """The run lock is taken over at once from a holder whose process is gone. A killed run's
    JVM may linger as a zombie (exited, its exit status never collected by its parent): that
    holder is gone too, or the next run would wait for the lease to end."""
    host = spark.sql("select reflect('lakehouse.RunProcess', 'id')").first()[0].split("@", 1)[1]

    def gone(pid: int) -> bool:
        holder = f"{pid}@{host}"
        statement = f"select cast(reflect('lakehouse.RunProcess', 'isGone', '{holder}') as boolean)"
        return spark.sql(statement).first()[0]

    live = subprocess.Popen(["sleep", "60"])
    zombie = subprocess.Popen(["true"])  # exits at once; not waited for until the end
    deadline = time.time() + 10
    while process_state(zombie.pid) != "Z" and time.time() < deadline:
        time.sleep(0.05)
    try:
        assert process_state(zombie.pid) == "Z"
        assert gone(live.pid) is False
        assert gone(zombie.pid) is True
    finally:
        live.kill()
        live.wait()
        zombie.wait()
    assert gone(live.pid) is True  # collected: no such process


def test_this_runs_jvm_maps_the_class_archive(spark):
    """`lakehouse test` (like `lakehouse build`) records the JVM class archive before anything
    starts Spark, and every embedded target's JVM maps it (the adapter's class_archive.py).
    An archive recorded for other jars or another Java would be ignored without a word, every
    new process paying its full start again: this run's own JVM must have mapped it."""
    from dbt.adapters.lakehouse.class_archive import archive_path

    archive = archive_path()
    assert archive.is_file(), f"no class archive at {archive}: run `lakehouse class-archive`"
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    jcmd = Path(os.environ["JAVA_HOME"]) / "bin" / "jcmd"
    info = subprocess.run([str(jcmd), str(pid), "VM.info"], capture_output=True, text=True)
    mapped = re.search(r"CDS archive\(s\) mapped at: .*?, size (\d+)", info.stdout)
    assert mapped, info.stdout[:2000] + info.stderr
    # the JDK's own base archive alone is about 12 MB; with ours on top, more than ours
    assert int(mapped.group(1)) > archive.stat().st_size, (mapped.group(0), archive)
