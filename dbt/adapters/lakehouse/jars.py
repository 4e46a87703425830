"""The jars an embedded session puts on Spark's class path: Iceberg's Spark runtime, from its
wheel, and the adapter's Java helpers, compiled once per installation.

Spark SQL cannot see names that start with "_" or ".", so the landing loader asks Hadoop
directly whether a batch folder holds its `_SUCCESS` marker, through
`reflect('lakehouse.LandingFolders', 'isComplete', folder)`, and lists only the batch folders
changed since the last load (`changedFolders`). Spark 3.5 SQL cannot put a property in a
snapshot summary either: `SnapshotSummary.stamp` does, for the completeness watermark. Small
writes a run makes every time go through Iceberg's API too, a file and a commit without a
Spark job: the run lock's row (`RunLock`), the maintenance log's rows (`AppendRows`).

The sources (dbt/include/lakehouse/java/) are compiled with the JDK's javac against the
pyspark jars and the Iceberg runtime the first time a session needs them (a few seconds).
The jar lives beside the venv it was compiled for (`<venv>/share/lakehouse/helpers-<key>/`,
like the JVM class archive), never in the package folder: the key is a digest of the sources,
pyspark's version and the Iceberg jar, so changed sources or versions get a new jar.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dbt.include.lakehouse import PACKAGE_PATH

ICEBERG_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
SOURCES = Path(PACKAGE_PATH) / "java"
JAR_NAME = "lakehouse-helpers.jar"
CACHE_DIR_ENV = "LAKEHOUSE_CACHE_DIR"


def iceberg_runtime_jar() -> Path:
    """The Iceberg 1.10.2 Spark runtime jar shipped by snowpark-connect-deps-iceberg 1.0.2."""
    from snowpark_connect_deps_iceberg import get_jar_path

    jar = Path(get_jar_path(ICEBERG_JAR))
    if not jar.is_file():
        raise FileNotFoundError(f"Iceberg runtime jar missing at {jar}")
    return jar


def cache_dir() -> Path:
    """Where compiled helpers are kept: LAKEHOUSE_CACHE_DIR, else the venv's share/lakehouse/
    when it is writable, else the user's cache folder."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    venv_share = Path(sys.prefix) / "share" / "lakehouse"
    existing = next((p for p in (venv_share, *venv_share.parents) if p.exists()), None)
    if existing is not None and os.access(existing, os.W_OK):
        return venv_share
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return user_cache / "lakehouse"


def _tool(name: str) -> str:
    """javac/jar of the JDK Spark uses (JAVA_HOME), else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    candidates = [Path(home) / "bin" / name] if home else []
    on_path = shutil.which(name)
    candidates += [Path(on_path)] if on_path else []
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    raise RuntimeError(
        f"`{name}` not found: the adapter compiles its Java helpers ({SOURCES}) with a JDK 17. "
        "Install a JDK (not only a JRE), or set JAVA_HOME to one."
    )


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def helper_jar_path(iceberg_jar: Path) -> Path:
    """Where this installation keeps the jar of these sources, this pyspark and `iceberg_jar`:
    any change to one of them names another folder."""
    import pyspark

    digest = hashlib.sha1(f"{pyspark.__version__}|{iceberg_jar.name}".encode())
    for source in _sources():
        digest.update(source.relative_to(SOURCES).as_posix().encode() + source.read_bytes())
    return cache_dir() / f"helpers-{digest.hexdigest()[:12]}" / JAR_NAME


def helper_jar(iceberg_jar: Path | None = None) -> Path:
    """The compiled jar, built when this installation has none for these sources, against the
    pyspark jars and `iceberg_jar` (SnapshotSummary uses Iceberg's API)."""
    import pyspark

    iceberg_jar = iceberg_jar or iceberg_runtime_jar()
    jar = helper_jar_path(iceberg_jar)
    if jar.is_file():
        return jar
    folder = jar.parent
    folder.mkdir(parents=True, exist_ok=True)
    sources = _sources()
    classpath = f"{Path(pyspark.__file__).parent / 'jars' / '*'}{os.pathsep}{iceberg_jar}"
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        classes = Path(scratch) / "classes"
        command = [_tool("javac"), "--release", "8", "-nowarn", "-cp", classpath]
        command += ["-d", str(classes)]
        compiled = subprocess.run([*command, *map(str, sources)], capture_output=True, text=True)
        if compiled.returncode != 0:
            raise RuntimeError(f"compiling {SOURCES} failed:\n{compiled.stderr}")
        built = Path(scratch) / JAR_NAME
        subprocess.run([_tool("jar"), "cf", str(built), "-C", str(classes), "."], check=True)
        os.replace(built, jar)  # atomic: concurrent sessions never see half a jar
    return jar
