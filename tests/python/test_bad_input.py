"""The bad-input matrix: every kind of malformed record production sends, landed through
the real models. For each, the run goes on and the record is either in its target or in
the quarantine with the expected reason: landed = accepted + rejected, per source.

Builds into its own schemas (var schema_prefix) from its own landing folder, so it shares
the test run's SparkSession and metastore without touching the warehouse tests' tables."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scripts.landing import LandingZone

PREFIX = "badin_"
INGESTED = "2026-03-02T12:00:00.000Z"
MISSING = object()  # a field absent from the JSON object (a column dropped upstream)
ACCEPTED = "accepted"


def event(offset: int, **fields: Any) -> dict[str, Any]:
    record = {
        "event_id": f"e{offset}",
        "user_id": "1",
        "video_id": "1",
        "event_type": "play",
        "event_at": "2026-03-02T10:00:00.000Z",
        "watch_ms": "1000",
        "video_duration_ms": "2000",
        "os": "ios",
        "app_version": "1.0",
        "region": "cn",
        "_ingested_at": INGESTED,
        "_kafka_partition": "0",
        "_kafka_offset": str(offset),
    }
    record.update(fields)
    return {k: v for k, v in record.items() if v is not MISSING}


def user_change(offset: int, op: str, user_id: Any, lsn: Any, name: str, **fields: Any) -> dict:
    record = {
        "op": op,
        "user_id": user_id,
        "user_name": name,
        "region": "cn",
        "is_creator": "false",
        "level": "1",
        "registered_at": "2026-01-01T00:00:00.000Z",
        "_source_lsn": lsn,
        "_source_committed_at": "2026-03-02T09:00:00.000Z",
        "_kafka_partition": "0",
        "_kafka_offset": str(offset),
    }
    record.update(fields)
    return {k: v for k, v in record.items() if v is not MISSING}


def video_change(offset: int, video_id: str, lsn: str, **fields: Any) -> dict:
    record = {
        "op": "+I",
        "video_id": video_id,
        "author_user_id": "1",
        "title": f"video {video_id}",
        "category": "music",
        "duration_ms": "2000",
        "published_at": "2026-01-01T00:00:00.000Z",
        "_source_lsn": lsn,
        "_source_committed_at": "2026-03-02T09:00:00.000Z",
        "_kafka_partition": "0",
        "_kafka_offset": str(offset),
    }
    record.update(fields)
    return {k: v for k, v in record.items() if v is not MISSING}


class RepeatedKey(dict):
    """A record whose line names one key a second time, at its end: JSON parsers keep the
    last value (Python's, Spark's struct parse), and so must the models."""

    def __init__(self, record: dict, key: str, value: Any) -> None:
        super().__init__(record)
        self.repeated = (key, value)

    def line(self) -> str:
        key, value = self.repeated
        return json.dumps(dict(self))[:-1] + f", {json.dumps(key)}: {json.dumps(value)}}}"


def line_of(record: dict | str) -> str:
    if isinstance(record, RepeatedKey):
        return record.line()
    return record if isinstance(record, str) else json.dumps(record)


# (case, record or raw line, expected fate) per source and batch. Offsets identify records.
EVENTS_1 = [
    ("valid", event(1), ACCEPTED),
    ("unparseable line", '{"event_id": "e-broken", "user_id": ', "unparseable_record"),
    ("wrong type: key", event(2, user_id="abc"), "invalid_user_id"),
    ("wrong type: value", event(3, watch_ms="ten seconds"), "invalid_watch_ms"),
    ("null key", event(4, event_id=None), "missing_event_id"),
    ("empty key", event(5, event_id="  "), "missing_event_id"),
    ("unknown event type", event(6, event_type="teleport"), "unknown_event_type"),
    ("duplicate: first delivery", event(7, event_id="e-dup"), ACCEPTED),
    ("duplicate: re-sent", event(8, event_id="e-dup"), "duplicate_event_id"),
    ("far-future timestamp", event(9, event_at="2099-01-01T00:00:00.000Z"), "event_at_in_future"),
    ("ancient timestamp", event(10, event_at="1970-01-01T00:00:00.000Z"), "event_at_too_old"),
    ("unparseable timestamp", event(11, event_at="yesterday-ish"), "invalid_event_at"),
    ("added column upstream", event(12, ab_test_group="B"), ACCEPTED),
    ("missing column upstream", event(13, region=MISSING), ACCEPTED),
    ("missing key column", event(14, user_id=MISSING), "invalid_user_id"),
    ("numbers as JSON numbers", event(15, user_id=2, watch_ms=1500), ACCEPTED),
    ("wrong type: arrival time", event(16, _ingested_at="soon"), "invalid_ingested_at"),
    ("missing arrival time", event(17, _ingested_at=MISSING), "missing_ingested_at"),
    ("empty arrival time", event(18, _ingested_at=" "), "missing_ingested_at"),
    (
        "missing arrival time, far-future event",
        event(19, _ingested_at=None, event_at="2099-01-01T00:00:00.000Z"),
        "missing_ingested_at",
    ),
    (
        "a key repeated: its last value wins",
        RepeatedKey(event(20, watch_ms="ten seconds"), "watch_ms", "1200"),
        ACCEPTED,
    ),
    (
        "a key repeated: a bad last value",
        RepeatedKey(event(21), "watch_ms", "x"),
        "invalid_watch_ms",
    ),
]
USERS_1 = [
    ("insert", user_change(1, "+I", "1", "1", "one"), ACCEPTED),
    ("insert", user_change(2, "+I", "2", "2", "two"), ACCEPTED),
    ("insert", user_change(3, "+I", "3", "3", "three"), ACCEPTED),
    ("unknown op code", user_change(4, "X", "4", "4", "four"), "unknown_change_op"),
    ("null key", user_change(5, "+I", None, "5", "nobody"), "missing_key"),
    ("wrong type: key", user_change(6, "+I", "six", "6", "six"), "missing_key"),
    ("wrong type: value", user_change(7, "+I", "7", "7", "seven", level="high"), "invalid_level"),
    ("wrong type: position", user_change(8, "+I", "8", "abc", "eight"), "invalid_source_lsn"),
    ("unparseable line", '{"op": "+I", "user_id": "9", "user_na', "unparseable_record"),
    ("duplicate change", user_change(9, "+U", "2", "12", "two-b"), ACCEPTED),
    ("duplicate change re-sent", user_change(10, "+U", "2", "12", "two-b"), ACCEPTED),
    ("out of order: newer first", user_change(11, "+U", "3", "20", "three-c"), ACCEPTED),
    ("out of order: older later", user_change(12, "+U", "3", "15", "three-b"), ACCEPTED),
    ("added column upstream", user_change(13, "+I", "10", "13", "ten", vip="true"), ACCEPTED),
    (
        "missing column upstream",
        user_change(14, "+I", "11", "14", "eleven", region=MISSING),
        ACCEPTED,
    ),
]
VIDEOS_1 = [
    ("insert", video_change(1, "1", "1"), ACCEPTED),
    ("insert", video_change(2, "2", "2"), ACCEPTED),
    ("wrong type: value", video_change(3, "3", "3", duration_ms="long"), "invalid_duration_ms"),
]
EVENTS_2 = [
    ("valid, next batch", event(101, video_id="2"), ACCEPTED),
    # a connector restart re-sends offsets it had landed: same partition and offset
    ("re-delivered by a connector restart", event(1), "redelivered_record"),
    ("re-delivered duplicate", event(7, event_id="e-dup"), "redelivered_record"),
]
USERS_2 = [
    ("stale change one batch late", user_change(101, "+U", "3", "18", "three-stale"), ACCEPTED),
    ("delete", user_change(102, "-D", "1", "30", "one"), ACCEPTED),
    ("stale update after the delete", user_change(103, "+U", "1", "25", "one-again"), ACCEPTED),
    # a delete or before-image needs only its key and position: its old values may be junk
    (
        "delete with a bad before-image",
        user_change(104, "-D", "10", "31", "ten", level="n/a", is_creator="maybe"),
        ACCEPTED,
    ),
    ("before-image, bad values", user_change(105, "-U", "11", "32", "x", level="n/a"), ACCEPTED),
    ("re-delivered change", user_change(2, "+I", "2", "2", "two"), "redelivered_record"),
]
# dim_users after each batch, from the highest source position per key
DIM_USERS = {
    1: {1: "one", 2: "two-b", 3: "three-c", 10: "ten", 11: "eleven"},
    2: {2: "two-b", 3: "three-c", 11: "eleven"},
}
SOURCES = {  # landing folder -> (ODS table, quarantine source_table)
    "client_events": ("ods_client__events", "client_events"),
    "appdb_users": ("ods_appdb__user_changes", "appdb_users"),
    "appdb_videos": ("ods_appdb__video_changes", "appdb_videos"),
}


def land(landing: Path, folder: str, batch: int, cases: list) -> None:
    zone = LandingZone(landing)
    target = zone.batch_folder(folder, batch)
    lines = [line_of(c[1]) for c in cases]
    zone.write_file(target, "part-00000.jsonl", "".join(line + "\n" for line in lines))
    zone.mark_complete(target)


@pytest.fixture(scope="module")
def build(spark, dbt, data_dir: Path):
    """Land batch 1, build; land batch 2, build. Returns the table states after each."""
    landing = data_dir / "bad_input_landing"
    states = {}
    for batch, (events, users, videos) in {
        1: (EVENTS_1, USERS_1, VIDEOS_1),
        2: (EVENTS_2, USERS_2, []),
    }.items():
        land(landing, "client_events", batch, events)
        land(landing, "appdb_users", batch, users)
        land(landing, "appdb_videos", batch, videos)
        dbt(["build", "--vars", json.dumps({"schema_prefix": PREFIX})], landing=landing)
        states[batch] = {
            "events": {
                r.kafka_offset: r
                for r in spark.sql(f"select * from {PREFIX}dwd.dwd_client__events").collect()
            },
            "rejected": spark.sql(
                f"select * from {PREFIX}dwd.dwd_quarantine__rejected_records"
            ).collect(),
            "dim_users": {
                r.user_id: r for r in spark.sql(f"select * from {PREFIX}dwd.dim_users").collect()
            },
            "dim_videos": {
                r.video_id for r in spark.sql(f"select * from {PREFIX}dwd.dim_videos").collect()
            },
            "ods_rows": {
                folder: spark.sql(f"select count(*) from {PREFIX}ods.{ods}").first()[0]
                for folder, (ods, _) in SOURCES.items()
            },
        }
    return states


def fate(state: dict, source_table: str, batch: int, case: tuple) -> str:
    """Where one landed record of a batch ended up: 'accepted' or its quarantine reason(s)."""
    record = case[1]
    rejected = [
        r for r in state["rejected"] if r.source_table == source_table and int(r._batch_id) == batch
    ]
    if isinstance(record, str):  # unparseable: only its raw text identifies it
        return ",".join(r.reject_reason for r in rejected if r.raw_record == record) or "lost"
    offset = int(record["_kafka_offset"])
    reasons = [r.reject_reason for r in rejected if r.kafka_offset == offset]
    event = state["events"].get(offset)
    accepted = source_table != "client_events" or (event and int(event._batch_id) == batch)
    if source_table != "client_events":
        return ",".join(reasons) or ACCEPTED  # applied changes are checked via dim_users
    return ",".join(reasons + ([ACCEPTED] if accepted else [])) or "lost"


@pytest.mark.parametrize(
    ("source_table", "batch", "case"),
    [("client_events", 1, c) for c in EVENTS_1]
    + [("client_events", 2, c) for c in EVENTS_2]
    + [("appdb_users", 1, c) for c in USERS_1]
    + [("appdb_users", 2, c) for c in USERS_2]
    + [("appdb_videos", 1, c) for c in VIDEOS_1],
    ids=lambda value: value[0] if isinstance(value, tuple) else str(value),
)
def test_every_bad_record_lands_or_is_quarantined_with_its_reason(build, source_table, batch, case):
    assert fate(build[2], source_table, batch, case) == case[2]


def test_landed_equals_accepted_plus_rejected_for_every_source(build):
    landed = {
        "client_events": EVENTS_1 + EVENTS_2,
        "appdb_users": USERS_1 + USERS_2,
        "appdb_videos": VIDEOS_1,
    }
    state = build[2]
    for folder, cases in landed.items():
        rejected = [r for r in state["rejected"] if r.source_table == SOURCES[folder][1]]
        accepted = sum(1 for c in cases if c[2] == ACCEPTED)
        assert state["ods_rows"][folder] == len(cases), folder  # ODS keeps every line
        assert len(rejected) + accepted == len(cases), folder
    assert len(state["events"]) == sum(1 for c in EVENTS_1 + EVENTS_2 if c[2] == ACCEPTED)


@pytest.mark.parametrize("batch", [1, 2])
def test_changes_apply_by_source_position_whatever_the_arrival_order(build, batch):
    users = build[batch]["dim_users"]
    assert {user_id: row.user_name for user_id, row in users.items()} == DIM_USERS[batch]
    assert users[11].region is None  # a column missing upstream is null, the row is kept
    assert build[batch]["dim_videos"] == {1, 2}


def test_accepted_values_are_typed_not_nulled(build):
    events = build[2]["events"]
    assert events[15].user_id == 2 and events[15].watch_ms == 1500
    assert events[13].region is None and events[12].region == "cn"
    assert events[20].watch_ms == 1200  # the line's last value of a repeated key


def test_each_loads_fields_are_counted_once_per_line_that_carries_them(spark, build):
    """ods_landing__fields_by_load, which counts them from what the typed model kept of its
    one parse, against the fields of the lines as Python reads what was landed."""
    expected = Counter(
        field
        for _, record, _ in EVENTS_1
        if not isinstance(record, str)
        for field in json.loads(line_of(record))
    )
    counted = spark.sql(f"""
        select field_name, line_count from {PREFIX}ods.ods_landing__fields_by_load
        where source_table = 'client_events' and _load_id = (
            select min(_load_id) from {PREFIX}ods.ods_landing__fields_by_load)""").collect()
    assert dict(counted) == dict(expected)
    assert expected["region"] == len(EVENTS_1) - 2  # one line lacks it, one is no JSON


def test_fields_no_source_declares_stay_raw_and_are_reported(spark, build):
    """An upstream field added before the yml declares it is kept in ODS's raw line and
    listed as schema drift with its line count, ready to be surfaced by a model change."""
    drift = {
        (r.source_table, r.field_name): r.line_count
        for r in spark.sql(f"select * from {PREFIX}ods.ods_landing__undeclared_fields").collect()
    }
    assert drift == {("client_events", "ab_test_group"): 1, ("appdb_users", "vip"): 1}
    raw = spark.sql(f"""
        select get_json_object(_raw_line, '$.ab_test_group') from {PREFIX}ods.ods_client__events
        where get_json_object(_raw_line, '$._kafka_offset') = '12'""").first()[0]
    assert raw == "B"


def test_a_landed_file_above_the_size_limit_is_refused_by_name_then_loaded_once_allowed(
    spark, dbt, data_dir: Path, build
):
    """A file above the limit (var landing_max_file_bytes, a guard against a writer that
    never rolls its file) stops its source's load before any line is read, naming the file,
    its size, the limit and what to do; nothing of it is loaded, nothing dropped. Once the
    limit allows it, it loads like any other file."""
    landing = data_dir / "bad_input_landing"
    cases = [(f"line {i}", event(200 + i), ACCEPTED) for i in range(20)]
    land(landing, "client_events", 3, cases)
    size = (landing / "client_events" / "batch=000003" / "part-00000.jsonl").stat().st_size
    ods = f"{PREFIX}ods.ods_client__events"
    before = spark.sql(f"select count(*) from {ods}").first()[0]

    # the source's model alone: what its build would do first, without the rest of a build
    model = ["run", "--select", "ods_client__events"]
    limited = json.dumps({"schema_prefix": PREFIX, "landing_max_file_bytes": size - 1})
    run = dbt([*model, "--vars", limited], expect_success=False, landing=landing)
    assert not run.success
    assert "part-00000.jsonl" in run.log and f"{size:,} bytes" in run.log
    assert f"limit of {size - 1:,} bytes" in run.log and "landing_max_file_bytes" in run.log
    assert spark.sql(f"select count(*) from {ods}").first()[0] == before

    dbt([*model, "--vars", json.dumps({"schema_prefix": PREFIX})], landing=landing)
    loaded = spark.sql(f"select count(*) from {ods} where cast(_batch_id as int) = 3").first()[0]
    assert loaded == len(cases)


def test_a_file_read_in_many_splits_keeps_every_line_and_its_number(spark, dbt, data_dir: Path):
    """ODS reads a landed file line by line in splits spread over the cores (a file of any
    size, no task holding it whole), and numbers each line from the splits before it. With
    splits of 1 KiB, a file of lines of every shape (a line longer than several splits, empty
    lines, a '\r' kept in its line, multi-byte characters on split boundaries, no final
    newline) lands in ODS line for line, each with its number in the file."""
    landing = data_dir / "bad_input_landing"
    lines = []
    for i in range(400):
        record = event(300 + i, region="大陆" * (i % 7))
        lines.append(json.dumps(record, ensure_ascii=False) + ("\r" if i % 53 == 5 else ""))
        if i % 61 == 3:
            lines.append("")
        if i == 200:
            lines.append(json.dumps(event(900, os="x" * 5000)))  # several splits long
    content = "\n".join(lines).encode()  # no final newline
    zone = LandingZone(landing)
    folder = zone.batch_folder("client_events", 4)
    zone.write_file(folder, "part-00000.jsonl", content.decode())
    zone.mark_complete(folder)
    split_bytes = 1024
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(split_bytes))
    try:
        model = ["run", "--select", "ods_client__events"]
        dbt([*model, "--vars", json.dumps({"schema_prefix": PREFIX})], landing=landing)
        # as ODS reads it: the landing table as registered (splits inside the long line hold
        # no line start, so no line: they are not counted)
        splits = spark.sql(f"""
            select count(distinct _metadata.file_block_start) from {PREFIX}landing.client_events
            where batch = '000004'""").first()[0]
        assert splits > len(content) // split_bytes - 10 > 100
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    expected = {number: line.decode() for number, line in enumerate(content.split(b"\n"), 1)}
    rows = spark.sql(f"""
        select _source_line, _raw_line from {PREFIX}ods.ods_client__events
        where _batch_id = '000004'""").collect()
    assert len(rows) == len(expected) == len(lines)
    assert {r._source_line: r._raw_line for r in rows} == expected


def test_a_run_sends_openlineage_events_named_by_table_location(
    spark, dbt, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The on-run-end hook emit_lineage: per model that ran, START and COMPLETE with the
    tables it read and the table it wrote, named by their locations with a symlink to the
    catalog name. A dimension state reads ODS only through its ephemeral typed model: that
    ODS table is its input. The transport is the client's configuration (here a file named
    by OPENLINEAGE_CONFIG)."""
    events = tmp_path / "events.jsonl"
    config = tmp_path / "openlineage.yml"
    config.write_text(f"transport:\n  type: file\n  log_file_path: {events}\n  append: true\n")
    monkeypatch.setenv("OPENLINEAGE_CONFIG", str(config))
    selected = ["dwd_client__events", "dim_users__state"]
    dbt(["run", "--select", *selected, "--vars", json.dumps({"schema_prefix": PREFIX})],
        landing=data_dir / "bad_input_landing")  # fmt: skip
    sent = [json.loads(line) for line in events.read_text().splitlines()]

    def completed(model: str) -> dict:
        runs = [e for e in sent if e["job"]["name"] == f"model.lakehouse.{model}"]
        assert [e["eventType"] for e in runs] == ["START", "COMPLETE"], model
        return runs[-1]

    def located(dataset: dict) -> str:  # <schema>.db/<table>, the end of its location
        return "/".join(dataset["name"].rsplit("/", 2)[-2:])

    warehouse = spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:").rstrip("/")
    (output,) = completed("dwd_client__events")["outputs"]
    assert output["namespace"] == "file"
    assert output["name"] == f"{warehouse}/{PREFIX}dwd.db/dwd_client__events"
    links = output["facets"]["symlinks"]["identifiers"]
    assert [link["name"] for link in links] == [f"{PREFIX}dwd.dwd_client__events"]
    state = completed("dim_users__state")
    assert [located(d) for d in state["inputs"]] == [f"{PREFIX}ods.db/ods_appdb__user_changes"]
    assert [located(d) for d in state["outputs"]] == [f"{PREFIX}dwd.db/dim_users__state"]
