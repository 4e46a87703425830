"""Cost follows the batch: what each incremental model reads, proven with Iceberg's own scan
metrics (files planned after pruning), not with timings.

A warehouse of its own (var schema_prefix) is built from two batches; a scheduled run loads
a third; then a fourth batch is loaded into ODS only. Each model's SQL, compiled by dbt with
its watermark and touched days resolved to literals, is run here and the files its scans
planned are counted:
  - with no new data, no upstream data file is read;
  - with one new load, the event detail and the schema-drift counts read only the ODS files
    of that load and, to deduplicate, the detail only the day partitions a new event can
    fall in;
  - DWS reads only the detail's partitions of the days the new events touched;
  - a scheduled run parses the new load's lines once, in its typed model (cached for the
    run), and the detail, the dimension states and the quarantine read no ODS file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest
from iceberg_scans import data_files, scanned_files

from scripts.bench.scan_metrics import ScanCounter
from scripts.generate_landing import LandingGenerator, Scale

PREFIX = "cost_"
SEED = 41
# Twelve days per batch and a three-day lateness allowance: the history spans more days than
# a new load's events can have, so bounded reads are visible as files not read.
SCALE = Scale(
    users=200,
    videos=60,
    events_per_batch=600,
    batches=2,
    min_changes_per_batch=8,
    days_per_batch=12,
)
LATENESS_DAYS = 3
INCREMENTAL_MODELS = [
    "dwd_client__events",
    "dws_video__daily",
    "dws_user__daily",
    "ods_landing__fields_by_load",
    "dim_users__changes",
]


class CostWarehouse:
    def __init__(self, root: Path, dbt) -> None:
        self.root, self._dbt = root, dbt
        self.vars = json.dumps({"schema_prefix": PREFIX, "max_event_lateness_days": LATENESS_DAYS})

    def land(self, batches: int) -> None:
        self.batches = batches
        scale = Scale(**{**SCALE.__dict__, "batches": batches})
        LandingGenerator(self.root, SEED, scale).run(log=lambda _: None)

    def land_next(self) -> None:
        self.land(self.batches + 1)

    def dbt(self, *args: str, on_message=None):
        return self._dbt(
            [*args, "--vars", self.vars], landing=self.root / "landing", on_message=on_message
        )

    def compiled(self, model: str) -> str:
        """The model's SELECT as dbt renders it now (watermarks resolved as literals)."""
        run = self.dbt("compile", "--select", model)
        (node,) = [r.node for r in run.result.results if getattr(r.node, "name", None) == model]
        return node.compiled_code


@pytest.fixture(scope="module")
def warehouse(dbt, data_dir) -> CostWarehouse:
    built = CostWarehouse(data_dir / "cost", dbt)
    built.land(SCALE.batches)
    built.dbt("build", "--exclude", "resource_type:test")
    return built


@pytest.mark.parametrize("model", INCREMENTAL_MODELS)
def test_a_run_without_new_data_reads_no_upstream_file(spark, warehouse, model):
    sql = warehouse.compiled(model)
    scans = scanned_files(spark, sql)
    upstream = {table: n for table, n in scans.items() if model not in table}
    assert sum(upstream.values()) == 0, (model, scans, sql[:2000])


def test_a_scheduled_run_parses_each_new_line_once(spark, warehouse):
    """dwd_landing__typed_rows caches each typed model's rows of the new load for the run; their
    readers (the detail, the dimension states, the quarantine, the schema-drift counts) read the
    cache and no ODS file. Measured per model: one thread, so a model's scans are those between
    its START line and the next; the cache is read while its readers run. Every reader is up to
    date first: this test comes right after the fixture's build, before any test lands a batch.
    The quarantine has never rejected a video change (the generator lands none bad), so its
    rows say nothing of how far it has read the videos: its record of the loads it has read
    each source through does (record_checked_through)."""
    dwd, quarantine = f"{PREFIX}dwd", f"{PREFIX}dwd.dwd_quarantine__rejected_records"
    sources = {  # ODS table: its typed model, its landing table, the model of its valid lines
        "ods_client__events": ("dwd_client__events_checked", "client_events", "dwd_client__events"),
        "ods_appdb__user_changes": (
            "dwd_appdb__user_changes_checked",
            "appdb_users",
            "dim_users__state",
        ),
        "ods_appdb__video_changes": (
            "dwd_appdb__video_changes_checked",
            "appdb_videos",
            "dim_videos__state",
        ),
    }
    watermarks = {
        "dwd_client__events": "_load_id",
        "dim_users__state": "_checked_load_id",
        "dim_videos__state": "_checked_load_id",
    }
    loaded = {}
    for source, (_, _, reader) in sources.items():
        loaded[source] = spark.sql(f"select max(_load_id) from {PREFIX}ods.{source}").first()[0]
        own = spark.sql(f"select max({watermarks[reader]}) from {dwd}.{reader}").first()[0]
        assert own == loaded[source], (source, own, loaded)
    videos = f"select count(*) from {quarantine} where source_table = 'appdb_videos'"
    assert spark.sql(videos).first()[0] == 0

    warehouse.land_next()
    per_model: dict[str, Counter] = {}
    cached: dict[str, int] = {}
    current = ["on-run-start"]
    with ScanCounter(spark) as scans:

        def attribute(message: str) -> None:  # dbt's thread, before the model's SQL runs
            started = re.search(r" START sql \w+ model \S+?\.(\w+) ", message)
            if not started:
                return
            per_model[current[0]] = scans.take()
            current[0] = started[1]
            for typed, _, reader in sources.values():
                if current[0] == reader:
                    cache = f"{dwd}__{typed}__this_run"  # the session's: it is dbt's
                    cached[typed] = spark.sql(f"select count(*) from {cache}").first()[0]

        run = warehouse.dbt("run", "--threads", "1", on_message=attribute)
        per_model[current[0]] = scans.take()
    compiled = {r.node.name: r.node.compiled_code for r in run.result.results}
    for source, (typed, _, reader) in sources.items():
        ods = f"{PREFIX}ods.{source}"
        new_lines = spark.sql(f"select count(*) from {ods} where _load_id > {loaded[source]}")
        assert cached[typed] == new_lines.first()[0] > 0, (typed, cached)
        for model in (reader, "dwd_quarantine__rejected_records", "ods_landing__fields_by_load"):
            assert per_model[model][f"spark_catalog.{ods}"] == 0, (source, model, per_model[model])
            # up to date, the reader reads the cache alone: not the typed model below the
            # load, which Spark would analyze again to find nothing (typed_rows' `after`)
            assert f"from __dbt__cte__{typed} where _load_id <" not in compiled[model], model
    assert not spark.sql("show views like '*__this_run'").collect()
    assert not spark.sql("show views in global_temp like '*__this_run'").collect()


def test_a_new_load_is_read_alone_and_deduplicated_within_its_days(spark, warehouse):
    ods, detail = f"spark_catalog.{PREFIX}ods.ods_client__events", f"{PREFIX}dwd.dwd_client__events"
    ods_files_before = data_files(spark, ods)
    warehouse.land_next()
    # the landed lines only: the drift counts, an ODS model too, are measured below
    warehouse.dbt("run", "--select", "path:models/ods", "--exclude", "ods_landing__fields_by_load")
    new_load = spark.sql(f"select max(_load_id) from {ods}").first()[0]
    new_files = data_files(spark, ods) - ods_files_before
    assert new_files > 0

    scans = scanned_files(spark, warehouse.compiled("dwd_client__events"))
    assert scans[ods] == new_files, scans  # the new load's files, none of the history
    # the schema-drift counts parse the new load's lines alone too
    fields = scanned_files(spark, warehouse.compiled("ods_landing__fields_by_load"))
    assert fields[ods] == new_files, fields
    warehouse.dbt("run", "--select", "ods_landing__fields_by_load")  # as a scheduled run would
    # the event days a new event may have (its arrival - lateness .. + skew), and no others
    days = spark.sql(f"""
        select min(to_date(arrived - make_interval(0, 0, 0, {LATENESS_DAYS}))),
               max(to_date(arrived + make_interval(0, 0, 0, 0, 24)))
        from (select try_cast(get_json_object(_raw_line, '$._ingested_at') as timestamp) arrived
              from {ods} where _load_id = {new_load})""").first()
    in_window = data_files(
        spark,
        f"spark_catalog.{detail}",
        f"partition.event_at_day between date'{days[0]}' and date'{days[1]}'",
    )
    assert 0 < scans[f"spark_catalog.{detail}"] <= in_window, (scans, in_window)
    assert data_files(spark, f"spark_catalog.{detail}") > in_window, "every day is in the window"


def test_dws_reads_only_the_partitions_of_the_touched_days(spark, warehouse):
    detail = f"spark_catalog.{PREFIX}dwd.dwd_client__events"
    warehouse.dbt("run", "--select", "dwd_client__events")
    new_load = spark.sql(f"select max(_load_id) from {detail}").first()[0]
    touched = [
        row[0]
        for row in spark.sql(
            f"select distinct event_date from {detail} where _load_id = {new_load}"
        ).collect()
    ]
    day_list = ", ".join(f"date'{day}'" for day in touched)
    touched_files = data_files(spark, detail, f"partition.event_at_day in ({day_list})")
    for model in ("dws_video__daily", "dws_user__daily"):
        scans = scanned_files(spark, warehouse.compiled(model))
        assert scans[detail] == touched_files, (model, scans, touched_files)
    assert data_files(spark, detail) > touched_files, "the new events touch every day"


def test_a_run_lists_only_the_batch_folders_changed_since_its_last_load(spark, warehouse):
    """Landing history dated a day back: a run with nothing new lists no folder and reads no
    ODS file; a file renamed later into an old folder changes that folder's time, so the next
    run lists that folder alone and loads the file (a re-delivery into an old batch)."""
    landing = warehouse.root / "landing"
    day_ago = time.time() - 86_400
    for folder in landing.glob("*/batch=*"):
        os.utime(folder, (day_ago, day_ago))
    with ScanCounter(spark) as scans:
        quiet = warehouse.dbt("run", "--select", "path:models/ods")
        ods_files = {t: n for t, n in scans.take().items() if f"{PREFIX}ods." in t}
    assert "client.events: 0 batch folder(s) with files changed since" in quiet.log
    assert sum(ods_files.values()) == 0, ods_files

    old_folder = sorted(landing.glob("client_events/batch=*"))[0]
    hidden = old_folder / ".late.jsonl.tmp"
    shutil.copyfile(next(old_folder.glob("part-*.jsonl")), hidden)
    hidden.rename(old_folder / "late.jsonl")  # a writer's rename, as the landing protocol says
    late = warehouse.dbt("run", "--select", "path:models/ods")
    assert "client.events: 1 batch folder(s) with files changed since" in late.log
    assert "client.events: 1 new file(s) to load" in late.log
    ods = f"{PREFIX}ods.ods_client__events"
    loaded = spark.sql(f"select count(*) from {ods} where _source_file like '%/late.jsonl'")
    assert loaded.first()[0] == len((old_folder / "late.jsonl").read_text().splitlines()) > 0
