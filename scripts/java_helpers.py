"""The project's Java helpers (scripts/java/), compiled once into a jar on Spark's class path.

Spark SQL cannot see names that start with "_" or ".", so the landing loader asks Hadoop
directly whether a batch folder holds its `_SUCCESS` marker, through
`reflect('lakehouse.LandingFolders', 'isComplete', folder)`, and lists only the batch folders
changed since the last load (`changedFolders`). Spark 3.5 SQL cannot put a property in a
snapshot summary either: `SnapshotSummary.stamp` does, for the completeness watermark. Small
writes a run makes every time go through Iceberg's API too, a file and a commit without a
Spark job: the run lock's row (`RunLock`), the maintenance log's rows (`AppendRows`). The
source is compiled with the JDK's javac against the pyspark jars and the Iceberg runtime the
first time a session needs it (a few seconds), into `build/`; a changed source is recompiled.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCES = Path(__file__).resolve().parent / "java"
BUILD_DIR = Path(__file__).resolve().parent.parent / "build"
JAR_NAME = "lakehouse-helpers.jar"


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
        f"`{name}` not found: the project compiles its Java helpers ({SOURCES}) with a JDK 17. "
        "Install a JDK (not only a JRE), or set JAVA_HOME to one."
    )


def helper_jar(iceberg_jar: Path) -> Path:
    """The compiled jar, built when missing or older than a source file, against the pyspark
    jars and `iceberg_jar` (SnapshotSummary uses Iceberg's API)."""
    import pyspark

    jar = BUILD_DIR / JAR_NAME
    sources = sorted(SOURCES.rglob("*.java"))
    newest = max(path.stat().st_mtime for path in sources)
    if jar.is_file() and jar.stat().st_mtime >= newest:
        return jar
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    classpath = f"{Path(pyspark.__file__).parent / 'jars' / '*'}{os.pathsep}{iceberg_jar}"
    with tempfile.TemporaryDirectory(dir=BUILD_DIR) as scratch:
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
