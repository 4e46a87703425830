"""Exactly once, whatever the timing of deliveries. Real threads and processes drive the
timing; the checks start at the landing files: every line of a complete batch is in ODS
exactly once, landed = accepted + rejected for every file, no event twice in DWD, and the
dimensions and DWS equal truths computed without the models (tests/python/layers.py).

One warehouse (var schema_prefix) is fed in order:
  1. batch 1, a plain build;
  2. batch 2 landed by a writer thread that pauses after its first file until the run has
     listed the landing zone: the run must load nothing of it (no marker yet);
  3. batches 3 and 4 landed by a writer thread with seeded random pauses while a run loads;
  4. batch 5 by a writer process killed after its first file: reported, never half-loaded;
  5. a connector restart re-delivering a range of offsets, late, into batch 2's folder;
  6. the killed writer rerun, then one build: everything above reconciles;
  7. batch 1's ODS lines expired by retention, then re-sent into its folder: never loaded
     again (the compact ledger).
Two builds overlapping in separate processes on one catalog (a metastore service) close it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from layers import (
    SOURCES,
    assert_events_reconcile_per_file,
    assert_landed_lines_in_ods_once,
    check_layers,
    landed_files,
)

from scripts.generate_landing import LandingGenerator, Scale
from scripts.landing import MARKER, LandingZone, split_lines
from scripts.spark_config import (
    PROJECT_DIR,
    ClusterSettings,
    environment_without_project_settings,
    remote_catalog_conf,
)

PREFIX = "once_"
SEED = 31
SCALE = Scale(
    users=300,
    videos=80,
    events_per_batch=600,
    batches=1,
    min_changes_per_batch=10,
    files_per_batch=3,
)
ODS_ONLY = ["run", "--select", "path:models/ods"]
REDELIVERED_EVENTS = range(40, 100)  # lines of batch 2's first event file, sent again
REDELIVERED_CHANGES = range(0, 4)


class Warehouse:
    """A data folder of its own and the dbt runs that build it under PREFIX."""

    def __init__(self, root: Path, dbt) -> None:
        self.root, self.landing, self._dbt = root, root / "landing", dbt
        self.vars = json.dumps({"schema_prefix": PREFIX})

    def land(self, batches: int, after_file=None) -> None:
        scale = Scale(**{**SCALE.__dict__, "batches": batches})
        LandingGenerator(self.root, SEED, scale, after_file=after_file).run(log=lambda _: None)

    def dbt(self, args: list[str], on_message=None, **variables):
        variables = json.dumps({**json.loads(self.vars), **variables}) if variables else self.vars
        return self._dbt([*args, "--vars", variables], landing=self.landing, on_message=on_message)

    def ods_lines_of_batch(self, spark, batch: int, sources: list[str] | None = None) -> int:
        return sum(
            spark.sql(
                f"select count(*) from {PREFIX}ods.{model} where _batch_id = '{batch:06d}'"
            ).first()[0]
            for source, model in SOURCES.items()
            if sources is None or source in sources
        )


def assert_no_line_twice(spark) -> None:
    for model in SOURCES.values():
        doubled = spark.sql(f"""
            select _source_file, _source_line from {PREFIX}ods.{model}
            group by 1, 2 having count(*) > 1""").collect()
        assert doubled == [], f"{model}: lines loaded twice: {doubled[:3]}"


@pytest.fixture(scope="module")
def warehouse(spark, dbt, data_dir) -> Warehouse:
    built = Warehouse(data_dir / "exactly_once", dbt)
    built.land(1)
    built.dbt(["build"])
    assert_landed_lines_in_ods_once(spark, built.landing, PREFIX)
    check_layers(spark, built.root, 1, PREFIX)
    return built


def test_a_batch_listed_mid_write_waits_for_its_marker(spark, warehouse):
    """The run lists the landing zone after the writer's first file, before its marker."""
    first_file_written, listed = threading.Event(), threading.Event()

    def pause_after_first_file(_path: str) -> None:
        if not first_file_written.is_set():
            first_file_written.set()
            assert listed.wait(timeout=600), "the run never listed client events"

    writer = threading.Thread(target=warehouse.land, args=(2, pause_after_first_file))
    writer.start()
    assert first_file_written.wait(timeout=120)

    def on_message(message: str) -> None:
        if message.startswith("landing client.events:"):
            listed.set()

    run = warehouse.dbt(ODS_ONLY, on_message=on_message)
    writer.join(timeout=600)
    assert not writer.is_alive()
    # the visible first file was not loaded: not half a batch, nothing of it (the other
    # sources' models run beside it and may list their batch 2 after the writer finished it)
    assert warehouse.ods_lines_of_batch(spark, 2, sources=["client_events"]) == 0
    assert_each_source_loaded_whole_or_not(spark, warehouse, 2)
    assert_no_line_twice(spark)
    assert "wait for their batch's _SUCCESS marker" in run.log


@pytest.mark.parametrize("batch", [3, 4])
def test_a_writer_landing_file_by_file_during_a_run(spark, warehouse, batch):
    """Seeded interleavings: the writer starts and pauses at random moments of the run."""
    rng = random.Random(batch)
    pauses = [rng.uniform(0.0, 4.0) for _ in range(3 * SCALE.files_per_batch + 1)]

    def land() -> None:
        time.sleep(pauses.pop())
        warehouse.land(batch, after_file=lambda _path: time.sleep(pauses.pop()))

    writer = threading.Thread(target=land)
    writer.start()
    warehouse.dbt(ODS_ONLY)
    writer.join(timeout=600)
    assert not writer.is_alive()
    assert_no_line_twice(spark)
    # each source's batch is loaded whole or not at all, whatever the moment of listing
    assert_each_source_loaded_whole_or_not(spark, warehouse, batch)


def assert_each_source_loaded_whole_or_not(spark, warehouse: Warehouse, batch: int) -> None:
    for source in SOURCES:
        folder = LandingZone(warehouse.landing).batch_folder(source, batch)
        landed = sum(len(split_lines(Path(p).read_text())) for p in landed_files_in(folder))
        loaded = warehouse.ods_lines_of_batch(spark, batch, sources=[source])
        assert loaded in (0, landed), f"{source} batch {batch}: {loaded} of {landed} lines loaded"


def landed_files_in(folder: str) -> list[Path]:
    return sorted(p for p in Path(folder).glob("*.jsonl") if not p.name.startswith("."))


def test_a_writer_killed_mid_batch_leaves_nothing_half_loaded(spark, warehouse):
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from scripts.generate_landing import LandingGenerator, Scale\n"
        f"scale = Scale(**{{**{SCALE.__dict__!r}, 'batches': 5}})\n"
        "def stall(path):\n"
        "    print('landed', path, flush=True)\n"
        "    time.sleep(600)\n"
        f"root = Path({str(warehouse.root)!r})\n"
        f"generator = LandingGenerator(root, {SEED}, scale, after_file=stall)\n"
        "generator.run(log=lambda _: None)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", code], cwd=PROJECT_DIR, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout.readline().startswith("landed")  # its first file is visible
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)
    run = warehouse.dbt(ODS_ONLY)
    assert "wait for their batch's _SUCCESS marker" in run.log
    assert warehouse.ods_lines_of_batch(spark, 5) == 0
    states = spark.sql(f"""
        select file_state, count(*) from {PREFIX}ods.ods_landing__files
        where batch_id = '000005' group by 1""").collect()
    assert dict(states) == {"waiting_for_marker": 1}, states


def test_a_connector_restart_redelivers_offsets_into_an_old_batch_folder(warehouse):
    """Records already landed (same partition and offset) arrive again, late, as a new file
    in batch 2's folder (complete since long): loaded once as lines, rejected as records."""
    zone = LandingZone(warehouse.landing)
    for source, lines in (
        ("client_events", REDELIVERED_EVENTS),
        ("appdb_users", REDELIVERED_CHANGES),
    ):
        folder = zone.batch_folder(source, 2)
        original = split_lines((Path(folder) / "part-00000.jsonl").read_text())
        text = "".join(original[i] + "\n" for i in lines)
        zone.write_file(folder, "part-restart-00000.jsonl", text)


def test_after_the_writer_reruns_every_layer_is_exact(spark, warehouse):
    warehouse.land(5)  # the killed writer, run again: it completes batch 5
    warehouse.dbt(["build"])
    counts = assert_landed_lines_in_ods_once(spark, warehouse.landing, PREFIX)
    assert counts["client_events"] > 5 * SCALE.events_per_batch
    assert_events_reconcile_per_file(spark, PREFIX)
    check_layers(spark, warehouse.root, 5, PREFIX)
    redelivered = dict(
        spark.sql(f"""
            select source_table, count(*) from {PREFIX}dwd.dwd_quarantine__rejected_records
            where reject_reason = 'redelivered_record' and _source_file like '%part-restart%'
            group by 1""").collect()
    )
    assert redelivered == {
        "client_events": len(REDELIVERED_EVENTS),
        "appdb_users": len(REDELIVERED_CHANGES),
    }


def test_a_file_changed_after_its_load_is_named_in_the_ledger_warning(warehouse):
    """A connector rewrites a file it delivered long ago: the ledger's warn test counts it
    and names its source, path and state in the log."""
    changed = landed_files(warehouse.landing, "appdb_videos")[0]
    times = changed.stat()
    os.utime(changed, (times.st_atime, times.st_mtime + 60))
    try:
        run = warehouse.dbt(["test", "--select", "warn_landed_files_needing_attention"])
    finally:
        os.utime(changed, (times.st_atime, times.st_mtime))
    [result] = [r for r in run.result.results if r.node.resource_type == "test"]
    assert (result.status, result.failures) == ("warn", 1)
    file = f"{changed.parent.name}/{changed.name}"
    named = [line for line in run.log.splitlines() if file in line]
    assert named and "appdb_videos" in named[0] and "is changed_after_load: " in named[0], named


# -- ODS lines expired by retention: the compact ledger -----------------------------------------

EXPIRED_BATCH = "000001"  # aged past the rule below
ODS_RETENTION = {"column": "_loaded_at", "keep_days": 35}
RESENT_AFTER_EXPIRY = {"client_events": 25, "appdb_users": 3}  # records of batch 1, sent again
RESENT_FILE = "part-resent-after-expiry.jsonl"
LATE_FILE = "part-late-new-records.jsonl"  # events past every delivered offset, a bad type
LATE_RECORDS = 5


def identified(line: str) -> tuple[int, int] | None:
    """A landed line's Kafka partition and offset, none when it carries no such identity."""
    try:
        record = json.loads(line)
        return int(record["_kafka_partition"]), int(record["_kafka_offset"])
    except (ValueError, KeyError, TypeError):
        return None


def highest_offsets(files: list[Path]) -> dict[int, int]:
    """{partition: highest offset} among the records of these landed files."""
    highest: dict[int, int] = {}
    for file in files:
        for partition, offset in filter(None, map(identified, split_lines(file.read_text()))):
            highest[partition] = max(highest.get(partition, offset), offset)
    return highest


def short_path(path: str) -> str:
    return "/".join(str(path).rsplit("/", 2)[-2:])  # batch=<id>/<file>, whatever the scheme


def test_lines_expired_by_retention_are_never_loaded_again(spark, warehouse):
    """ODS keeps its lines 35 days by when they were loaded. Batch 1 is aged 40 days (its
    `_loaded_at` moved back: the clock, not the data) and the nightly's retention removes its
    lines, recording their files and Kafka positions in the compact ledger first. Then a
    connector restart re-sends records of batch 1 into batch 1's folder, and a late file of new
    records lands there too, which brings the folder back to the listing: its old files stay
    loaded (the ledger holds them), the re-sent records are refused as delivered before, never
    loaded as new, and the new ones are not (they are refused for their own bad type). Batch 6
    lands across the nightly, its markers after it: it loads whole, once."""
    ods = {source: f"{PREFIX}ods.{model}" for source, model in SOURCES.items()}
    expired = f"_batch_id = '{EXPIRED_BATCH}'"
    for table in ods.values():
        spark.sql(f"update {table} set _loaded_at = _loaded_at - interval 40 days where {expired}")
    kept = {table: spark.sql(f"select count(*) from {table} where not {expired}").first()[0]
            for table in ods.values()}  # fmt: skip
    # batch 6 lands across the nightly: its files now, its markers only after it
    warehouse.land(6)
    zone = LandingZone(warehouse.landing)
    waiting = [zone.batch_folder(source, 6) for source in ods]
    for folder in waiting:
        (Path(folder) / MARKER).unlink()
    expiring = {
        source: [f for f in landed_files(warehouse.landing, source)
                 if f.parent.name == f"batch={EXPIRED_BATCH}"]
        for source in ods
    }  # fmt: skip
    nightly = warehouse.dbt(
        ["run-operation", "iceberg_maintain_all",
         "--args", json.dumps({"select": list(SOURCES.values()), "remove_orphans": False})],
        retention_overrides={model: ODS_RETENTION for model in SOURCES.values()},
    )  # fmt: skip
    messages = nightly.log.splitlines()
    deleted = [m for m in messages if m.startswith("maintenance ") and "rows removed" in m]
    assert len(deleted) == len(ods), nightly.log[-3000:]
    ledger = f"{PREFIX}ops.expired_load_ledger"
    for source, table in ods.items():
        assert spark.sql(f"select count(*) from {table} where {expired}").first()[0] == 0
        left = spark.sql(f"select count(*) from {table} where not {expired}").first()[0]
        assert left == kept[table], source
        # the ledger, reconciled with the landing files: each file's lines, each partition's
        # highest offset
        lines = spark.sql(f"""select source_file, sum(line_count) from {ledger}
                              where ods_table = '{table}' group by 1""").collect()
        assert {short_path(path): n for path, n in lines} == {
            short_path(file): len(split_lines(file.read_text())) for file in expiring[source]
        }, source
        offsets = spark.sql(f"""select source_partition, max(through_offset) from {ledger}
                                where ods_table = '{table}' and source_partition is not null
                                group by 1""").collect()
        assert dict(map(tuple, offsets)) == highest_offsets(expiring[source]) != {}, source

    for folder in waiting:  # the late markers
        zone.mark_complete(folder)
    for source, count in RESENT_AFTER_EXPIRY.items():
        folder = zone.batch_folder(source, int(EXPIRED_BATCH))
        original = [line for line in split_lines((Path(folder) / "part-00000.jsonl").read_text())
                    if identified(line)]  # fmt: skip
        zone.write_file(folder, RESENT_FILE, "".join(line + "\n" for line in original[:count]))
        if source == "client_events":  # and new records, late, in the same folder
            late = [json.loads(line) for line in original[:LATE_RECORDS]]
            for number, event in enumerate(late):
                event.update(event_id=f"ev-late-after-expiry-{number}", event_type="not_a_type",
                             _kafka_offset=990_000_000 + number)  # fmt: skip
            zone.write_file(folder, LATE_FILE, "".join(json.dumps(e) + "\n" for e in late))
    detail = f"{PREFIX}dwd.dwd_client__events"
    before = completeness_stamps(spark, detail)
    warehouse.dbt(["build"])
    # completeness goes on across the retention pass: batch 6 moves the watermark forward
    after = completeness_stamps(spark, detail)
    assert after and max(after) > max(before, default=""), (before, after)
    for source, table in ods.items():
        # batch 1's expired files were not loaded again: its only lines are the late files'
        rows = spark.sql(f"select _source_file, _is_redelivery from {table} where {expired}")
        rows = rows.collect()
        resent = [row for row in rows if row[0].endswith(RESENT_FILE)]
        late = [row for row in rows if row[0].endswith(LATE_FILE)]
        assert len(rows) == len(resent) + len(late), (source, rows[:3])
        assert len(resent) == RESENT_AFTER_EXPIRY.get(source, 0) and all(r[1] for r in resent)
        # the ledger refuses what it holds, not what came after it
        assert len(late) == (LATE_RECORDS if source == "client_events" else 0)
        assert not any(row[1] for row in late), late
    quarantine = f"{PREFIX}dwd.dwd_quarantine__rejected_records"
    refused = spark.sql(f"""
        select source_table, count(*) from {quarantine}
        where reject_reason = 'redelivered_record' and _source_file like '%{RESENT_FILE}'
        group by 1""").collect()
    assert dict(map(tuple, refused)) == RESENT_AFTER_EXPIRY
    reasons = spark.sql(
        f"select reject_reason from {quarantine} where _source_file like '%{LATE_FILE}'"
    )
    reasons = [row[0] for row in reasons.collect()]
    assert len(reasons) == LATE_RECORDS and "redelivered_record" not in reasons, reasons
    for source, folder in zip(ods, waiting, strict=True):  # batch 6 whole, once
        landed = sum(len(split_lines(f.read_text())) for f in Path(folder).glob("part-*"))
        loaded = spark.sql(f"select count(*) from {ods[source]} where _batch_id = '000006'")
        assert loaded.first()[0] == landed > 0, source
    check_layers(spark, warehouse.root, 6, PREFIX)
    # the ledger's view names the expired files loaded, and every line (not only the last
    # loads') is placed: the expired files' accepted and rejected rows outlive their lines
    states = spark.sql(f"""select distinct file_state from {PREFIX}ods.ods_landing__files
                           where file_path like '%batch={EXPIRED_BATCH}/%'""").collect()
    assert [row[0] for row in states] == ["loaded"]
    warehouse.dbt(["test", "--select", "assert_every_landed_line_is_placed"])


def completeness_stamps(spark, table: str) -> list[str]:
    """Every completeness watermark the table's snapshots were stamped with."""
    rows = spark.sql(f"""select summary['lakehouse.complete-through'] from {table}.snapshots
                         where summary['lakehouse.complete-through'] is not null""").collect()
    return [row[0] for row in rows]


# -- two overlapping builds in separate processes -------------------------------------------


def build_process(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scripts.tasks", "dbt", "--target", "ci", "build"],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def test_two_overlapping_builds_load_every_file_once(spark, tmp_path_factory):
    from scripts.cluster import port_open, start_metastore

    root = tmp_path_factory.mktemp("overlap")
    port = next(p for p in range(19183, 19283) if not port_open("127.0.0.1", p))
    cluster = ClusterSettings(root=root / "service", metastore_port=port)
    LandingGenerator(root, SEED, Scale(**{**SCALE.__dict__, "batches": 2})).run(log=lambda _: None)
    service = start_metastore(cluster)
    env = environment_without_project_settings()
    env.update(
        LAKEHOUSE_DATA_DIR=str(root),
        LAKEHOUSE_METASTORE_URI=cluster.metastore_uri,
        LAKEHOUSE_WAREHOUSE_DIR=str(cluster.warehouse),
        LAKEHOUSE_DRIVER_MEMORY="1g",
    )
    try:
        first, lines, holds_lock = build_process(env), [], threading.Event()

        def drain() -> None:  # read all of it: a full pipe would stall the build
            for line in first.stdout:
                lines.append(line)
                if "run lock: held by this run" in line:
                    holds_lock.set()

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        assert holds_lock.wait(timeout=900), "".join(lines)[-3000:]
        second = build_process(env)  # starts while the first holds the lock
        second_log = second.communicate(timeout=1200)[0]
        first.wait(timeout=1200)
        reader.join(timeout=60)
        first_log = "".join(lines)
        assert first.returncode == 0, first_log[-3000:]
        assert second.returncode == 1, second_log[-3000:]
        assert "run lock: another run" in second_log and "this run wrote nothing" in second_log
        for key, value in remote_catalog_conf("overlap", cluster).items():
            spark.conf.set(key, value)
        for source, model in SOURCES.items():
            rows = spark.sql(f"""
                select count(*), count(distinct _source_file, _source_line)
                from overlap.ods.{model}""").first()
            landed = sum(
                len(split_lines(p.read_text())) for p in landed_files(root / "landing", source)
            )
            assert rows[0] == rows[1] == landed, (source, rows, landed)
    finally:
        os.killpg(service.pid, signal.SIGKILL)
        service.wait(timeout=60)


def test_landing_registration_follows_the_configured_location(spark, warehouse, tmp_path):
    """A landing table whose location changed is registered again (not kept by
    `create table if not exists`), and back."""

    def location() -> str:
        rows = spark.sql(f"describe table extended {PREFIX}landing.client_events").collect()
        return next(r.data_type for r in rows if r.col_name == "Location")

    assert location() == f"file:{warehouse.landing}/client_events"
    operation = ["run-operation", "register_landing_sources", "--vars", warehouse.vars]
    warehouse._dbt(operation, landing=tmp_path / "moved")
    assert location() == f"file:{tmp_path}/moved/client_events"
    warehouse.dbt(operation)
    assert location() == f"file:{warehouse.landing}/client_events"
    # unchanged, a registration is read from the schema's listing and kept, not redone
    assert "sources up to date" in warehouse.dbt(operation).log
