"""Truths computed without the models' SQL, shared by the warehouse tests: the generator's
ground truth for the dimensions, a pandas recomputation from the landed files for DWS, and
the landing files themselves for ODS (every landed line exactly once)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd

from dbt.adapters.lakehouse.embedded import is_uri
from scripts.landing import LandingZone

EVENT_TYPES = {"impression", "play", "like", "share", "comment", "follow"}
SOURCES = {  # landing folder -> ODS model
    "client_events": "ods_client__events",
    "appdb_users": "ods_appdb__user_changes",
    "appdb_videos": "ods_appdb__video_changes",
}


# -- independent expectations ------------------------------------------------------------


def landed_files(landing: Path, source: str) -> list[Path]:
    """The files a correct load holds: visible files of batch folders that are complete."""
    zone = LandingZone(landing)
    return [
        Path(path)
        for path in zone.visible_files(source)
        if zone.is_complete(str(Path(path).parent))
    ]


def landed_lines(landing: str | Path, source: str) -> Iterator[tuple[str, int, str]]:
    """(file as Spark names it, line number, line) of every complete landed file, on local
    disk or in object storage."""
    zone = LandingZone(landing)
    scheme = urlparse(zone.location).scheme if is_uri(zone.location) else ""
    named = "file:" if scheme in ("", "file") else f"{scheme}://"
    for path in zone.visible_files(source):
        if zone.is_complete(path.rsplit("/", 1)[0]):
            for number, line in enumerate(zone.lines(path), start=1):
                yield named + path, number, line


def landed_events(data_dir: Path, landing: str | Path | None = None) -> pd.DataFrame:
    records = []
    for _, _, line in landed_lines(landing or data_dir / "landing", "client_events"):
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # unparseable: quarantined, never aggregated
    return pd.DataFrame(records)


def valid_unique_events(raw: pd.DataFrame) -> pd.DataFrame:
    events = raw.copy()
    events["event_at"] = pd.to_datetime(events["event_at"], errors="coerce", utc=True)
    events["ingested_at"] = pd.to_datetime(events["_ingested_at"], errors="coerce", utc=True)
    user = pd.to_numeric(events["user_id"], errors="coerce")
    video = pd.to_numeric(events["video_id"], errors="coerce")
    valid = (
        events["event_id"].fillna("").str.strip().ne("")
        & user.notna()
        & video.notna()
        & events["event_type"].isin(EVENT_TYPES)
        & events["event_at"].notna()
        & ~(events["event_at"] > events["ingested_at"] + pd.Timedelta(hours=24))
    )
    events = events[valid].assign(
        user_id=user[valid].astype("int64"), video_id=video[valid].astype("int64")
    )
    events = events.drop_duplicates("event_id")
    events["event_date"] = events["event_at"].dt.date
    events["watch_ms"] = pd.to_numeric(events["watch_ms"], errors="coerce")
    duration = pd.to_numeric(events["video_duration_ms"], errors="coerce")
    events["is_completed_play"] = (events["event_type"] == "play") & (
        events["watch_ms"] >= duration * 0.9
    )
    return events


def expected_video_daily(events: pd.DataFrame) -> pd.DataFrame:
    def per_group(g: pd.DataFrame) -> pd.Series:
        plays = g[g["event_type"] == "play"]
        return pd.Series(
            {
                "impression_count": int((g["event_type"] == "impression").sum()),
                "play_count": len(plays),
                "unique_viewers": plays["user_id"].nunique(),
                "watch_ms": int(plays["watch_ms"].fillna(0).sum()),
                "like_count": int((g["event_type"] == "like").sum()),
                "completed_play_count": int(g["is_completed_play"].sum()),
            }
        )

    return (
        events.groupby(["video_id", "event_date"])
        .apply(per_group, include_groups=False)
        .reset_index()
    )


def expected_user_daily(events: pd.DataFrame) -> pd.DataFrame:
    def per_group(g: pd.DataFrame) -> pd.Series:
        plays = g[g["event_type"] == "play"]
        return pd.Series(
            {
                "event_count": len(g),
                "play_count": len(plays),
                "videos_played": plays["video_id"].nunique(),
                "watch_ms": int(plays["watch_ms"].fillna(0).sum()),
                "follow_count": int((g["event_type"] == "follow").sum()),
            }
        )

    return (
        events.groupby(["user_id", "event_date"])
        .apply(per_group, include_groups=False)
        .reset_index()
    )


def assert_frames_equal(actual: pd.DataFrame, expected: pd.DataFrame, keys: list[str]) -> None:
    assert len(expected) > 0, "expectation is empty: the test would prove nothing"
    actual = actual[expected.columns].sort_values(keys).reset_index(drop=True)
    expected = expected.sort_values(keys).reset_index(drop=True)
    merged = actual.merge(expected, on=list(expected.columns), how="outer", indicator=True)
    differing = merged[merged["_merge"] != "both"]
    assert differing.empty, f"{len(differing)} differing rows:\n{differing.head(20)}"


def table(spark, name: str, columns: list[str]) -> pd.DataFrame:
    return spark.table(name).select(*columns).toPandas()


def truth(data_dir: Path, name: str, batch: int) -> pd.DataFrame:
    return pd.read_parquet(data_dir / "truth" / name / f"batch={batch:06d}.parquet")


def iso(ts: pd.Series) -> pd.Series:
    return pd.to_datetime(ts, utc=True).dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z"


USER_HISTORY_COLUMNS = ["user_name", "region", "is_creator", "user_level"]


def expected_user_history(data_dir: Path, built_after: Sequence[int]) -> list[tuple]:
    """Every version an SCD-2 snapshot of dim_users keeps when it ran after each of the batches
    `built_after` (what changed between two of its runs is one change), from the ground truth,
    as sorted (user_id, *USER_HISTORY_COLUMNS, is_current): a key whose columns changed has
    its old version closed and a new current one, a deleted key its version closed, a key
    inserted (again) a new current version."""
    current: dict[int, tuple] = {}
    closed: list[tuple] = []
    for batch in built_after:
        state = truth(data_dir, "users", batch).rename(columns={"level": "user_level"})
        now = {
            row[0]: row[1:]
            for row in state[["user_id", *USER_HISTORY_COLUMNS]]
            .astype(object)
            .itertuples(index=False, name=None)
        }
        for key, version in list(current.items()):
            if now.get(key) != version:
                closed.append((key, *version, False))
                del current[key]
        for key, version in now.items():
            current.setdefault(key, version)
    return sorted(closed + [(key, *version, True) for key, version in current.items()])


def assert_user_history(
    spark, data_dir: Path, built_after: Sequence[int], prefix: str = ""
) -> None:
    """dim_users_history holds exactly the versions the ground truth implies for snapshots
    run after each of the batches `built_after`."""
    rows = spark.sql(
        f"select user_id, {', '.join(USER_HISTORY_COLUMNS)}, dbt_valid_to is null as is_current"
        f" from {prefix}dwd.dim_users_history"
    ).collect()
    assert sorted(tuple(row) for row in rows) == expected_user_history(data_dir, built_after)


def check_layers(
    spark,
    data_dir: Path,
    batch: int,
    prefix: str = "",
    landing: str | None = None,
    erased: Sequence[str] = (),
) -> dict:
    """Dimensions against the generator's ground truth after `batch`, DWS against a pandas
    recomputation from the complete landed files (`landing`, else <data_dir>/landing). Tables
    under `prefix` (var schema_prefix). `erased`: user ids an erasure removed, so the truth
    has none of their rows and no video names them as its author."""
    erased = {str(user) for user in erased}
    users = table(
        spark,
        f"{prefix}dwd.dim_users",
        ["user_id", "user_name", "region", "is_creator", "user_level", "registered_at"],
    )
    users["registered_at"] = iso(users["registered_at"])
    expected_users = truth(data_dir, "users", batch).rename(columns={"level": "user_level"})
    expected_users = expected_users[~expected_users["user_id"].astype(str).isin(erased)]
    expected_users["user_level"] = expected_users["user_level"].astype("int32")
    users["user_level"] = users["user_level"].astype("int32")
    assert_frames_equal(users, expected_users, ["user_id"])

    videos = table(
        spark,
        f"{prefix}dwd.dim_videos",
        ["video_id", "author_user_id", "title", "category", "duration_ms", "published_at"],
    )
    videos["published_at"] = iso(videos["published_at"])
    expected_videos = truth(data_dir, "videos", batch)
    detached = expected_videos["author_user_id"].astype(str).isin(erased)
    for frame in (videos, expected_videos):
        frame["duration_ms"] = frame["duration_ms"].astype("int64")
        frame["author_user_id"] = frame["author_user_id"].astype("Int64")
    expected_videos.loc[detached, "author_user_id"] = pd.NA
    assert_frames_equal(videos, expected_videos, ["video_id"])
    for dimension, key in (("dim_users", "user_id"), ("dim_videos", "video_id")):
        assert_changelog_replays(spark, f"{prefix}dwd.{dimension}", key)

    events = valid_unique_events(landed_events(data_dir, landing))
    events = events[~events["user_id"].astype(str).isin(erased)]
    video_daily = expected_video_daily(events)
    assert_frames_equal(
        table(spark, f"{prefix}dws.dws_video__daily", list(video_daily.columns)),
        video_daily,
        ["video_id", "event_date"],
    )
    user_daily = expected_user_daily(events)
    assert_frames_equal(
        table(spark, f"{prefix}dws.dws_user__daily", list(user_daily.columns)),
        user_daily,
        ["user_id", "event_date"],
    )
    return {"batch": batch, "users": len(users), "events": len(events)}


def assert_changelog_replays(spark, dimension: str, key: str) -> None:
    """A consumer replaying the dimension's changelog (`<dimension>__changes`) from its first
    commit, change by change, holds exactly the dimension's rows; every before image is the
    row it held."""
    columns = spark.table(dimension).columns
    changes = spark.table(f"{dimension}__changes").collect()
    order = {"delete": 0, "update_before": 1, "update_after": 2, "insert": 2}
    held: dict = {}
    for change in sorted(changes, key=lambda c: (c._change_seq, c[key], order[c._change_type])):
        image = tuple(change[c] for c in columns)
        if change._change_type in ("delete", "update_before"):
            assert held.pop(change[key]) == image, change
        else:
            assert change[key] not in held, change
            held[change[key]] = image
    rows = {row[key]: tuple(row) for row in spark.table(dimension).collect()}
    assert held == rows, f"the replay of {dimension}__changes is not {dimension}"


def assert_landed_lines_in_ods_once(spark, landing: str | Path, prefix: str = "") -> dict[str, int]:
    """Every line of every complete landed file is in ODS exactly once, as landed, and ODS
    holds nothing else (no line of an incomplete batch). Returns the line count per source."""
    counts = {}
    for source, model in SOURCES.items():
        expected = Counter(landed_lines(landing, source))
        rows = spark.sql(
            f"select _source_file, _source_line, _raw_line from {prefix}ods.{model}"
        ).collect()
        actual = Counter((r._source_file, r._source_line, r._raw_line) for r in rows)
        assert sum(expected.values()) > 0, f"{source}: nothing landed, the check proves nothing"
        missing, extra = expected - actual, actual - expected
        assert not missing and not extra, (
            f"{source}: {sum(missing.values())} landed lines missing from ODS, "
            f"{sum(extra.values())} extra or doubled; e.g. {list(missing or extra)[:3]}"
        )
        counts[source] = sum(expected.values())
    return counts


def assert_events_reconcile_per_file(spark, prefix: str = "") -> None:
    """landed = accepted + rejected for every client event file, and no event twice."""
    mismatched = spark.sql(f"""
        with landed as (
            select _source_file, count(*) as n from {prefix}ods.ods_client__events group by 1
        ),
        accepted as (
            select _source_file, count(*) as n from {prefix}dwd.dwd_client__events group by 1
        ),
        rejected as (
            select _source_file, count(*) as n from {prefix}dwd.dwd_quarantine__rejected_records
            where source_table = 'client_events' group by 1
        )
        select landed._source_file, landed.n, accepted.n, rejected.n
        from landed
        left join accepted on landed._source_file = accepted._source_file
        left join rejected on landed._source_file = rejected._source_file
        where landed.n != coalesce(accepted.n, 0) + coalesce(rejected.n, 0)
    """).collect()
    assert mismatched == [], mismatched
    doubled = spark.sql(f"""
        select event_id from {prefix}dwd.dwd_client__events group by 1 having count(*) > 1
    """).collect()
    assert doubled == [], doubled
