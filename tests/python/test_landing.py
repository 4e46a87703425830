"""The landing protocol (scripts/landing.py) on real files: what a reader may see while a
writer works, and locations given as URIs reach the file system unchanged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyarrow import fs as pafs

from dbt.adapters.lakehouse.embedded import normalize
from scripts.generate_landing import LandingGenerator, Scale
from scripts.landing import MARKER, LandingZone, filesystem, split_lines
from scripts.spark_config import PROJECT_DIR


@pytest.mark.parametrize(
    ("location", "kind", "path"),
    [
        ("s3a://bucket/landing", pafs.S3FileSystem, "bucket/landing"),
        ("file:///srv/landing", pafs.LocalFileSystem, "/srv/landing"),
        ("/srv/landing", pafs.LocalFileSystem, "/srv/landing"),
    ],
)
def test_a_location_maps_to_its_file_system_without_connecting(location, kind, path):
    system, inside = filesystem(location)
    assert isinstance(system, kind) and inside == path
    assert normalize(location) == location  # absolute paths and URIs are kept as given


def test_a_file_is_invisible_until_whole_and_a_batch_until_marked(tmp_path):
    zone = LandingZone(tmp_path)
    folder = zone.batch_folder("client_events", 1)
    zone.write_file(folder, "part-00000.jsonl", "a\nb\n")
    assert not zone.is_complete(folder) and zone.complete_batches("client_events") == []
    zone.mark_complete(folder)
    assert zone.complete_batches("client_events") == ["batch=000001"]
    assert (Path(folder) / MARKER).is_file()
    assert [Path(p).name for p in zone.visible_files("client_events")] == ["part-00000.jsonl"]
    assert not list(Path(folder).glob(".*"))  # no hidden leftovers once the rename is done


def test_lines_are_what_lies_between_newlines():
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\n\nb") == ["a", "", "b"]
    assert split_lines("") == []
    assert split_lines("\x00not json") == ["\x00not json"]


def test_the_generator_writes_where_it_is_told(tmp_path):
    landing = f"file://{tmp_path / 'elsewhere'}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.generate_landing",
            "--out",
            str(tmp_path / "data"),
            "--landing",
            landing,
            "--batches",
            "1",
            "--users",
            "50",
            "--videos",
            "20",
            "--events-per-batch",
            "100",
        ],
        cwd=PROJECT_DIR,
        check=True,
        capture_output=True,
    )
    zone = LandingZone(landing)
    assert zone.complete_batches("client_events") == ["batch=000001"]
    assert not (tmp_path / "data" / "landing").exists()  # not the data folder's default
    assert (tmp_path / "data" / "truth" / "users" / "batch=000001.parquet").is_file()


def test_a_rerun_after_a_crash_completes_a_batch_with_the_same_bytes(tmp_path):
    scale = Scale(users=50, videos=20, events_per_batch=100, batches=1)
    LandingGenerator(tmp_path, 3, scale).run(log=lambda _: None)
    folder = Path(LandingZone(tmp_path / "landing").batch_folder("client_events", 1))
    before = {p.name: p.read_bytes() for p in folder.glob("part-*")}
    (folder / MARKER).unlink()  # as if the writer had died before its marker
    (folder / "part-00001.jsonl").unlink()
    LandingGenerator(tmp_path, 3, scale).run(log=lambda _: None)
    assert {p.name: p.read_bytes() for p in folder.glob("part-*")} == before
    assert (folder / MARKER).is_file()


@pytest.mark.parametrize("given_as", ["path", "file URI"])
def test_make_build_lands_sample_data_into_an_empty_landing_zone_once(
    tmp_path, monkeypatch, capsys, given_as
):
    """`make build`'s first step, on a fresh data folder, with the landing zone given as a
    path or a URI: three complete batches and their ground truth, then left as they are."""
    from scripts.generate_landing import landed_batches
    from scripts.tasks import ensure_sample_data

    landing = tmp_path / "landing"
    monkeypatch.setenv("LAKEHOUSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv(
        "LAKEHOUSE_LANDING_DIR", landing.as_uri() if given_as != "path" else str(landing)
    )
    ensure_sample_data("ci")
    assert len(landed_batches(landing)) == 3
    assert (tmp_path / "truth" / "users").is_dir()
    written = {p: p.stat().st_mtime_ns for p in landing.rglob("*") if p.is_file()}
    ensure_sample_data("ci")
    assert "holds 3 batches" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in landing.rglob("*") if p.is_file()} == written
