"""Write a landing zone for the short-video warehouse, one folder per arrival batch.

Sources (as a message-queue connector would land them, JSON lines):
  client_events/batch=NNNNNN/   client event reports (impression, play, like, share...)
  appdb_users/batch=NNNNNN/     changelog of the users table (Flink row kinds +I -U +U -D)
  appdb_videos/batch=NNNNNN/    changelog of the videos table

Each batch folder is written as a connector writes it (scripts/landing.py): part files under
hidden names, renamed when whole, then the completion marker `_SUCCESS`. The landing zone may
be any URI pyarrow can write (`--landing s3a://bucket/landing`); it defaults to the configured
LAKEHOUSE_LANDING_DIR. Besides the landing zone it writes the ground truth
(`<out>/truth/<table>/batch=NNNNNN.parquet`):
the source tables' state after each batch. Output is a pure function of the arguments:
batch k is byte-identical whether written alone or with the others, so re-running with a
larger --batches appends new batches the way a scheduler would find them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from scripts.cli import parser_from_doc
from scripts.landing import LandingZone

EVENT_TYPES = np.array(["impression", "play", "like", "share", "comment", "follow"])
EVENT_WEIGHTS = np.array([0.50, 0.30, 0.08, 0.03, 0.05, 0.04])
OS_NAMES = np.array(["ios", "android", "harmonyos"])
APP_VERSIONS = np.array(["8.1.0", "8.2.0", "8.2.1", "8.3.0"])
REGIONS = np.array(["cn-north", "cn-south", "cn-east", "sg", "us-west"])
CATEGORIES = np.array(["music", "comedy", "food", "travel", "gaming", "education"])
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Scale:
    users: int = 2_000
    videos: int = 500
    events_per_batch: int = 5_000
    batches: int = 3
    days_per_batch: float = 1.0
    # Share of the dimension rows changed per batch (article 004: about 1/10,000).
    change_fraction: float = 1e-4
    min_changes_per_batch: int = 12
    # Part files per batch folder: a batch lands file by file, then its marker.
    files_per_batch: int = 2


@dataclass
class SourceTable:
    """A source database table and its changelog position."""

    name: str
    key: str
    rows: dict[int, dict] = field(default_factory=dict)
    deleted: set[int] = field(default_factory=set)
    next_key: int = 1


def _iso_ms(stamps: pd.DatetimeIndex | pd.Series) -> np.ndarray:
    """ISO-8601 with milliseconds and Z, vectorised (pandas strftime is 20x slower)."""
    index = pd.DatetimeIndex(stamps)
    if index.tz is not None:
        index = index.tz_convert("UTC").tz_localize(None)
    return np.datetime_as_string(index.values.astype("datetime64[ms]"), unit="ms", timezone="UTC")


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _user_row(rng: np.random.Generator, user_id: int, at: datetime) -> dict:
    return {
        "user_id": user_id,
        "user_name": f"user_{user_id}_{rng.integers(0, 10_000)}",
        "region": str(rng.choice(REGIONS)),
        "is_creator": bool(rng.random() < 0.1),
        "level": int(rng.integers(1, 60)),
        "registered_at": _ts(at - timedelta(days=int(rng.integers(1, 900)))),
    }


def _video_row(rng: np.random.Generator, video_id: int, at: datetime, users: int) -> dict:
    return {
        "video_id": video_id,
        "author_user_id": int(rng.integers(1, users + 1)),
        "title": f"video {video_id} v{rng.integers(0, 10_000)}",
        "category": str(rng.choice(CATEGORIES)),
        "duration_ms": int(rng.integers(5_000, 180_000)),
        "published_at": _ts(at - timedelta(days=int(rng.integers(0, 300)))),
    }


class LandingGenerator:
    """Deterministic source systems; `run()` replays them batch by batch."""

    def __init__(
        self,
        out: Path,
        seed: int,
        scale: Scale,
        landing: str | Path | None = None,
        after_file: Callable[[str], None] | None = None,
    ):
        """`out`: the data folder (ground truth under it; landing zone too unless `landing`
        names one). `after_file(path)` is called as each file becomes visible: tests use it
        to run a build in the middle of a batch."""
        self.out = out
        self.zone = LandingZone(landing if landing is not None else out / "landing")
        self.after_file = after_file or (lambda _path: None)
        self.seed = seed
        self.scale = scale
        self.rng = np.random.default_rng(seed)
        self.lsn = 0
        self.offset = {"client_events": 0, "appdb_users": 0, "appdb_videos": 0}
        self.users = SourceTable("users", "user_id")
        self.videos = SourceTable("videos", "video_id")
        self.late_changes: dict[str, list[dict]] = {"users": [], "videos": []}
        self.resent_events: list[dict] = []

    # -- change logs ------------------------------------------------------------------

    def _change(self, op: str, row: dict, at: datetime) -> dict:
        self.lsn += 1
        return {"op": op, **row, "_source_lsn": self.lsn, "_source_committed_at": _ts(at)}

    def _new_row(self, table: SourceTable, key: int, at: datetime) -> dict:
        if table.name == "users":
            return _user_row(self.rng, key, at)
        return _video_row(self.rng, key, at, self.scale.users)

    def _initial_load(self, table: SourceTable, count: int, at: datetime) -> pd.DataFrame:
        """The connector's initial snapshot: every row as an insert, built column-wise."""
        rng = self.rng
        keys = np.arange(1, count + 1)
        days_ago = pd.to_timedelta(rng.integers(1, 900, count), unit="D")
        stamp = _iso_ms(pd.Timestamp(at) - days_ago)
        if table.name == "users":
            rows = pd.DataFrame(
                {
                    "user_id": keys,
                    "user_name": [
                        f"user_{k}_{v}"
                        for k, v in zip(keys, rng.integers(0, 10_000, count), strict=True)
                    ],
                    "region": rng.choice(REGIONS, count),
                    "is_creator": rng.random(count) < 0.1,
                    "level": rng.integers(1, 60, count),
                    "registered_at": stamp,
                }
            )
        else:
            rows = pd.DataFrame(
                {
                    "video_id": keys,
                    "author_user_id": rng.integers(1, self.scale.users + 1, count),
                    "title": [
                        f"video {k} v{v}"
                        for k, v in zip(keys, rng.integers(0, 10_000, count), strict=True)
                    ],
                    "category": rng.choice(CATEGORIES, count),
                    "duration_ms": rng.integers(5_000, 180_000, count),
                    "published_at": stamp,
                }
            )
        records = rows.to_dict("records")
        table.rows = dict(zip(keys.tolist(), records, strict=True))
        table.next_key = count + 1
        lsn = self.lsn + keys
        self.lsn += count
        return rows.assign(op="+I", _source_lsn=lsn, _source_committed_at=_ts(at))[
            ["op", *rows.columns, "_source_lsn", "_source_committed_at"]
        ]

    def _random_live_key(self, table: SourceTable) -> int:
        while True:  # rejection sampling: no list of a million keys per change
            key = int(self.rng.integers(1, table.next_key))
            if key in table.rows:
                return key

    def _batch_changes(self, table: SourceTable, start: datetime, end: datetime) -> list[dict]:
        """About change_fraction of the rows change: updates, deletes, re-inserts, bursts."""
        rng = self.rng
        span = (end - start).total_seconds()
        n = max(self.scale.min_changes_per_batch, int(len(table.rows) * self.scale.change_fraction))
        changes: list[dict] = []
        for _ in range(n):
            at = start + timedelta(seconds=float(rng.uniform(0, span)))
            roll = rng.random()
            if roll < 0.15 and table.deleted:  # re-insert of a deleted key
                key = int(rng.choice(sorted(table.deleted)))
                table.deleted.discard(key)
                table.rows[key] = self._new_row(table, key, at)
                changes.append(self._change("+I", table.rows[key], at))
                continue
            key = self._random_live_key(table)
            if roll < 0.30:  # delete
                changes.append(self._change("-D", table.rows.pop(key), at))
                table.deleted.add(key)
                continue
            if roll < 0.40:  # brand-new key
                key = table.next_key
                table.next_key += 1
                table.rows[key] = self._new_row(table, key, at)
                changes.append(self._change("+I", table.rows[key], at))
                continue
            # An update; sometimes several updates of the same key in one batch.
            for _ in range(1 if roll < 0.85 else int(rng.integers(2, 4))):
                before = table.rows[key]
                after = {**self._new_row(table, key, at), table.key: key}
                if table.name == "users":
                    after["registered_at"] = before["registered_at"]
                changes.append(self._change("-U", before, at))
                stale = self._change("+U", after, at)
                changes.append(stale)
                table.rows[key] = after
                if rng.random() < 0.3:
                    # A superseded after-image is re-delivered one batch late: it must
                    # lose against the newer change that already arrived.
                    self.late_changes[table.name].append(dict(stale))
                    after = {**self._new_row(table, key, at), table.key: key}
                    if table.name == "users":
                        after["registered_at"] = before["registered_at"]
                    changes.append(self._change("-U", table.rows[key], at))
                    changes.append(self._change("+U", after, at))
                    table.rows[key] = after
        return changes

    # -- client events ----------------------------------------------------------------

    def _events(self, batch: int, start: datetime, end: datetime) -> pd.DataFrame:
        rng, scale = self.rng, self.scale
        n = scale.events_per_batch
        span = (end - start).total_seconds()
        live_users = np.array(sorted(self.users.rows))
        live_videos = np.array(sorted(self.videos.rows))
        # Zipf-like skew: a few heavy users and hot videos produce most events.
        user_rank = np.minimum(rng.zipf(1.3, n), len(live_users)) - 1
        video_rank = np.minimum(rng.zipf(1.2, n), len(live_videos)) - 1
        user_perm = np.random.default_rng(self.seed + 1).permutation(len(live_users))
        video_perm = np.random.default_rng(self.seed + 2).permutation(len(live_videos))
        offsets = rng.uniform(0, span, n)
        # Late events: 5% arrive hours late, 1% days late (event_at lies in earlier days).
        lateness = np.where(rng.random(n) < 0.05, rng.uniform(3600, 6 * 3600, n), 0.0)
        lateness += np.where(rng.random(n) < 0.01, rng.uniform(86400, 3 * 86400, n), 0.0)
        event_at = pd.to_datetime(start) + pd.to_timedelta(offsets - lateness, unit="s")
        ingested_at = pd.to_datetime(start) + pd.to_timedelta(
            offsets + rng.uniform(1, 30, n), unit="s"
        )
        event_type = rng.choice(EVENT_TYPES, n, p=EVENT_WEIGHTS)
        duration = rng.integers(5_000, 180_000, n)
        watch = np.where(event_type == "play", (duration * rng.beta(2, 1.5, n)).astype(int), -1)
        frame = pd.DataFrame(
            {
                "event_id": [f"ev-{batch:06d}-{i:08d}" for i in range(n)],
                "user_id": live_users[user_perm[user_rank] % len(live_users)].astype(str),
                "video_id": live_videos[video_perm[video_rank] % len(live_videos)].astype(str),
                "event_type": event_type,
                "event_at": _iso_ms(event_at),
                "watch_ms": np.where(watch >= 0, watch.astype(str), None),
                "video_duration_ms": np.where(watch >= 0, duration.astype(str), None),
                "os": rng.choice(OS_NAMES, n),
                "app_version": rng.choice(APP_VERSIONS, n),
                "region": rng.choice(REGIONS, n),
                "_ingested_at": _iso_ms(ingested_at),
            }
        )
        return frame

    def _corrupt_events(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Bad input a real client fleet sends: DWD must quarantine each with a reason."""
        rng = self.rng
        bad = max(4, len(frame) // 1000)
        rows = rng.choice(len(frame), bad * 5, replace=False)
        frame = frame.copy()
        frame.loc[rows[:bad], "user_id"] = None
        frame.loc[rows[bad : 2 * bad], "event_id"] = ""
        frame.loc[rows[2 * bad : 3 * bad], "event_type"] = "teleport"
        frame.loc[rows[3 * bad : 4 * bad], "event_at"] = "2099-01-01T00:00:00.000Z"
        frame.loc[rows[4 * bad :], "event_at"] = "yesterday-ish"
        return frame

    # -- writing ----------------------------------------------------------------------

    def _with_arrival(self, source: str, records: pd.DataFrame) -> pd.DataFrame:
        records = records.copy()
        start = self.offset[source]
        records["_kafka_partition"] = np.arange(len(records)) % 4
        records["_kafka_offset"] = start + np.arange(len(records))
        self.offset[source] = start + len(records)
        return records

    def _write_batch(
        self, source: str, batch: int, records: pd.DataFrame, extra_lines: list[str]
    ) -> int:
        folder = self.zone.batch_folder(source, batch)
        if self.zone.is_complete(folder):
            return 0
        text = records.to_json(orient="records", lines=True, date_format="iso")
        lines = [*text.splitlines(), *extra_lines]
        parts = np.array_split(np.arange(len(lines)), max(1, self.scale.files_per_batch))
        for number, rows in enumerate(parts):
            body = "".join(lines[i] + "\n" for i in rows)
            # a rerun after a crash rewrites the same bytes under the same name
            path = self.zone.write_file(folder, f"part-{number:05d}.jsonl", body)
            self.after_file(path)
        self.zone.mark_complete(folder)  # last: only now may a run load the batch
        return len(lines)

    def _write_truth(self, table: SourceTable, batch: int) -> None:
        path = self.out / "truth" / table.name / f"batch={batch:06d}.parquet"
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(list(table.rows.values())).sort_values(table.key).to_parquet(path, index=False)

    def run(self, log=print) -> dict[str, int]:
        scale = self.scale
        counts = {"client_events": 0, "appdb_users": 0, "appdb_videos": 0}
        for batch in range(1, scale.batches + 1):
            start = EPOCH + timedelta(days=scale.days_per_batch * (batch - 1))
            end = start + timedelta(days=scale.days_per_batch)
            if batch == 1:  # the connector's initial snapshot of the source tables
                user_changes = [self._initial_load(self.users, scale.users, start)]
                video_changes = [self._initial_load(self.videos, scale.videos, start)]
            else:
                user_changes = self._batch_changes(self.users, start, end)
                video_changes = self._batch_changes(self.videos, start, end)
            # Deliver what was delayed last batch, then hold back this batch's stale copies.
            user_changes += self.late_changes["users"]
            video_changes += self.late_changes["videos"]
            self.late_changes = {"users": [], "videos": []}
            bad_changes = [  # an unknown operation code and a change without its key
                self._change("?X", {"user_id": 0}, start),
                self._change("+U", {"user_id": None, "user_name": "ghost"}, start),
            ]
            users_frame = self._with_arrival("appdb_users", _frame(user_changes, bad_changes))
            videos_frame = self._with_arrival("appdb_videos", _frame(video_changes, []))
            events = self._corrupt_events(self._events(batch, start, end))
            resent = pd.DataFrame(self.resent_events, columns=events.columns)
            dup_rows = self.rng.choice(len(events), max(2, len(events) // 200), replace=False)
            self.resent_events = events.iloc[dup_rows].to_dict("records")  # re-sent next batch
            events = pd.concat([events, events.iloc[dup_rows[: len(dup_rows) // 2]], resent])
            events = self._with_arrival("client_events", events.reset_index(drop=True))
            broken = ['{"event_id": "ev-broken", "user_id": ', "\x00not json at all"]
            counts["client_events"] += self._write_batch("client_events", batch, events, broken)
            counts["appdb_users"] += self._write_batch("appdb_users", batch, users_frame, [])
            counts["appdb_videos"] += self._write_batch("appdb_videos", batch, videos_frame, [])
            self._write_truth(self.users, batch)
            self._write_truth(self.videos, batch)
            log(
                f"batch {batch:6d}: {len(events):>9,} events, {len(users_frame):,} user and "
                f"{len(videos_frame):,} video changes"
            )
        return counts


def _frame(changes: list, extra: list[dict]) -> pd.DataFrame:
    """Changes as one frame: DataFrames (initial loads) and dicts, in order."""
    loose = [c for c in changes if not isinstance(c, pd.DataFrame)] + extra
    frames = [c for c in changes if isinstance(c, pd.DataFrame)]
    if loose:
        frames.append(pd.DataFrame(loose))
    return pd.concat(frames, ignore_index=True).convert_dtypes()


def landed_batches(landing: str | Path) -> list[str]:
    """Complete batch folders of the client events source."""
    return LandingZone(landing).complete_batches("client_events")


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("generate-landing", __doc__)
    defaults = Scale()
    parser.add_argument("--target", default="local", help="whose data folder and landing zone")
    parser.add_argument("--out", type=Path, help="data folder (default: the target's)")
    parser.add_argument(
        "--landing", help="landing zone URI or path (default: LAKEHOUSE_LANDING_DIR, <out>/landing)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--users", type=int, default=defaults.users)
    parser.add_argument("--videos", type=int, default=defaults.videos)
    parser.add_argument("--events-per-batch", type=int, default=defaults.events_per_batch)
    parser.add_argument("--batches", type=int, default=defaults.batches)
    parser.add_argument("--days-per-batch", type=float, default=defaults.days_per_batch)
    args = parser.parse_args(argv)
    if args.out is None or args.landing is None:
        from scripts.spark_config import DataPaths

        paths = DataPaths.for_target(args.target)
        if args.landing is None:
            local = args.out is not None and args.target != "s3"
            args.landing = args.out / "landing" if local else paths.landing
        args.out = args.out or paths.root
    scale = Scale(
        users=args.users,
        videos=args.videos,
        events_per_batch=args.events_per_batch,
        batches=args.batches,
        days_per_batch=args.days_per_batch,
    )
    if args.target == "s3":
        from dbt.adapters.lakehouse.object_store import ServiceSettings

        # the local services' endpoint unless LAKEHOUSE_S3_ENDPOINT names another store
        endpoint = ServiceSettings.from_env(args.out).s3_endpoint
        os.environ.setdefault("LAKEHOUSE_S3_ENDPOINT", endpoint)
    started = time.monotonic()
    generator = LandingGenerator(args.out, args.seed, scale, landing=args.landing)
    counts = generator.run()
    print(
        f"wrote {json.dumps(counts)} new records to {generator.zone.location} "
        f"in {time.monotonic() - started:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
