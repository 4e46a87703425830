"""Run a command as a process of its own and measure it as its user meets it: wall time from
launch to exit (interpreter and JVM start included) and the peak resident memory of its whole
process tree (Python, the JVM it launches, anything else it starts), sampled from /proc."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from scripts.spark_config import PROJECT_DIR, environment_without_project_settings

PAGE = os.sysconf("SC_PAGE_SIZE")
SAMPLE_EVERY_S = 0.1


@dataclass(frozen=True)
class Measured:
    seconds: float
    peak_rss_bytes: int


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            found += [int(child) for child in task.read_text().split()]
    except OSError:  # the process or a thread of it ended while we read
        pass
    return found


def executable(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:  # gone meanwhile
        return ""


def tree_rss(root: int) -> int:
    """Resident bytes of `root` and all its descendants now. A child still running its
    parent's executable is a fork before its exec (the JVM starts a shell command so): it
    shares its parent's pages, and counting them twice showed a JVM's 3 GB as 6."""
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        program = executable(pid)
        pending += [child for child in children(pid) if executable(child) != program]
    return total


def data_folder_env(data: Path) -> dict[str, str]:
    """The environment of a project command run as a process of its own on data folder
    `data`: its dbt target/ and logs/ there too, this checkout's adapter first on the path."""
    own = environment_without_project_settings()
    own.update(LAKEHOUSE_DATA_DIR=str(data), DBT_TARGET_PATH=str(data / "target"),
               DBT_LOG_PATH=str(data / "logs"), PYTHONPATH=str(PROJECT_DIR))  # fmt: skip
    return own


def run_measured(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> Measured:
    """Run `argv` to its end, its output into `log`; raise when it fails."""
    peak = 0
    with log.open("w") as out:
        started = time.perf_counter()
        process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.wait(SAMPLE_EVERY_S):
                peak = max(peak, tree_rss(process.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        returncode = process.wait()
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
    if returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ... exited {returncode}; its output: {log}")
    return Measured(seconds, peak)
