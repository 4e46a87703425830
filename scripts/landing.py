"""The landing zone's protocol, shared by the generator, the tests and the build command.

A landing location is a URI or a plain path (`s3a://bucket/landing`, `hdfs://nn/landing`,
`file:///data/landing`, `data/local/landing`); it is passed on unchanged to Spark, which
reads it through Hadoop. Under it, one folder per source and one folder per arrival batch:

    <landing>/<source>/batch=NNNNNN/part-00000.jsonl ... _SUCCESS

A writer makes its writes invisible until they are whole: each file is written under a name
Spark hides (a leading "."), then renamed; the batch's completion marker `_SUCCESS` is
written last, as Spark/Hadoop writers and most sink connectors do. ODS loads a file only
once its folder holds the marker, and each file only once (the load ledger, see
macros/landing/). A line is what lies between two "\\n" (a final newline ends the last one).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

from pyarrow import fs as pafs

from dbt.adapters.lakehouse.embedded import is_uri, normalize

MARKER = "_SUCCESS"
LOCAL_SCHEMES = {"", "file"}
S3_SCHEMES = {"s3", "s3a", "s3n"}  # Hadoop's names for S3, all one store to pyarrow


def join(location: str, *parts: str) -> str:
    return "/".join([location.rstrip("/"), *parts])


def filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow file system and path of a landing location (no connection is opened)."""
    parsed = urlparse(location)
    if not is_uri(location) or parsed.scheme in LOCAL_SCHEMES:
        return pafs.LocalFileSystem(), str(Path(parsed.path if is_uri(location) else location))
    if parsed.scheme in S3_SCHEMES:
        # a region given up front: from_uri would ask AWS for the bucket's region
        region = os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
        endpoint = os.environ.get("LAKEHOUSE_S3_ENDPOINT")  # an S3-compatible store, else AWS
        store = pafs.S3FileSystem(
            region=region,
            endpoint_override=endpoint,
            scheme=urlparse(endpoint).scheme if endpoint else "https",
        )
        return store, parsed.netloc + parsed.path.rstrip("/")
    return pafs.FileSystem.from_uri(location)  # hdfs:// and the rest: connects here


class LandingZone:
    """Writes and reads batch folders with the protocol above, on any pyarrow file system."""

    def __init__(self, location: str | Path) -> None:
        self.location = normalize(location)
        self.fs, self.root = filesystem(self.location)

    def batch_folder(self, source: str, batch: int) -> str:
        return join(self.root, source, f"batch={batch:06d}")

    def is_complete(self, folder: str) -> bool:
        return self.fs.get_file_info(join(folder, MARKER)).type == pafs.FileType.File

    def write_file(self, folder: str, name: str, text: str) -> str:
        """Write under a hidden name, then rename: readers see the whole file or nothing."""
        self.fs.create_dir(folder, recursive=True)
        hidden, visible = join(folder, f".{name}.inprogress"), join(folder, name)
        with self.fs.open_output_stream(hidden) as handle:
            handle.write(text.encode())
        self.fs.move(hidden, visible)
        return visible

    def mark_complete(self, folder: str) -> None:
        with self.fs.open_output_stream(join(folder, MARKER)):
            pass

    def complete_batches(self, source: str) -> list[str]:
        selector = pafs.FileSelector(join(self.root, source), allow_not_found=True)
        return sorted(
            info.base_name
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.Directory
            and info.base_name.startswith("batch=")
            and self.is_complete(info.path)
        )

    def visible_files(self, source: str) -> list[str]:
        """Every file Spark lists (hidden names excluded), complete batch or not."""
        selector = pafs.FileSelector(join(self.root, source), recursive=True, allow_not_found=True)
        return sorted(
            info.path
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File
            and not any(part.startswith((".", "_")) for part in info.path.split("/")[-2:])
        )

    def lines(self, path: str) -> list[str]:
        with self.fs.open_input_stream(path) as handle:
            return split_lines(handle.read().decode())


def split_lines(text: str) -> list[str]:
    """The landed lines of a file's text (the same rule ODS applies)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
