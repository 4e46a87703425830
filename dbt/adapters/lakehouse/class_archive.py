"""The JVM class-data-sharing archive an embedded session maps, when this installation has one.

A new JVM (every plain `dbt` command, every scheduled run) otherwise finds, parses and verifies
some 20,000 classes of Spark, Hadoop, Hive and Iceberg again. With the JDK's dynamic AppCDS
archive (`-XX:SharedArchiveFile`) it maps them from one file: measured in
docs/running-dbt.md#a-cold-start. The archive is recorded once per installation
(scripts/class_archive.py: `lakehouse build`, `lakehouse test`, `lakehouse class-archive`) and
kept beside the helper jar (`jars.cache_dir()`: the venv's share/lakehouse/). A JVM whose Java
or jars differ from the archive's ignores it and loads its classes as before: the archive
only ever changes the start-up time.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# "off" starts every JVM without the archive (B13's other side; a suspected archive fault)
DISABLE_ENV = "LAKEHOUSE_CLASS_ARCHIVE"
# Set for the process that records the archive; java_options() reads it.
RECORD_ENV = "LAKEHOUSE_CLASS_ARCHIVE_RECORD"
# A JVM that cannot use the archive says so on stdout, inside dbt's output: it still works.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_path() -> Path:
    """The archive for this venv's pyspark, Iceberg jar and Java: another one's name differs."""
    import pyspark

    from dbt.adapters.lakehouse.jars import cache_dir, iceberg_runtime_jar

    java_home = os.environ.get("JAVA_HOME", "")
    key = f"{pyspark.__version__}|{iceberg_runtime_jar().name}|{os.path.realpath(java_home)}"
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return cache_dir() / f"spark-classes-{digest}.jsa"  # beside the helper jar


def java_options() -> str:
    """The JVM options of an embedded target's driver: record the archive, use it, or none."""
    recording = os.environ.get(RECORD_ENV)
    if recording:
        return f"-XX:ArchiveClassesAtExit={recording} {QUIET}"
    if os.environ.get(DISABLE_ENV) == "off":
        return ""
    archive = archive_path()
    return f"-XX:SharedArchiveFile={archive} {QUIET}" if archive.is_file() else ""
