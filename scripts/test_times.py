"""Write the time each test file took in the last `lakehouse test` into docs/testing.md.

`lakehouse test` leaves pytest's JUnit report (target/pytest-junit.xml) and the run's facts
(target/test-run.json: wall time, cores, load averages sampled during the run, commit).
`.ci/run` adds the machine's yardstick, measured before the suite (target/yardstick.json) and
again after it (target/yardstick-after.json), and its own wall time, install included
(`--ci-seconds`, which also prints the suite's time in yardsticks). This command
turns them into the table between the test-times markers of docs/testing.md, so the times
there are always those of a real run, never typed.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from scripts.cli import parser_from_doc
from scripts.spark_config import PROJECT_DIR

JUNIT = PROJECT_DIR / "target" / "pytest-junit.xml"
RUN_FACTS = PROJECT_DIR / "target" / "test-run.json"
YARDSTICK = PROJECT_DIR / "target" / "yardstick.json"
YARDSTICK_AFTER = PROJECT_DIR / "target" / "yardstick-after.json"
DOC = PROJECT_DIR / "docs" / "testing.md"
START, END = "<!-- test-times:start -->", "<!-- test-times:end -->"


def seconds_per_file(junit: Path) -> dict[str, tuple[float, int]]:
    """file name -> (seconds, tests). A test's time includes its fixtures' setup and teardown,
    so a module fixture's build counts in the file that uses it."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        name = next((part for part in module if part.startswith("test_")), module[-1])
        totals[f"{name}.py"][0] += float(case.get("time", 0))
        totals[f"{name}.py"][1] += 1
    return {name: (seconds, int(tests)) for name, (seconds, tests) in totals.items()}


def table(junit: Path, facts: dict) -> str:
    per_file = sorted(seconds_per_file(junit).items(), key=lambda item: -item[1][0])
    total_seconds = sum(seconds for _, (seconds, _) in per_file)
    total_tests = sum(tests for _, (_, tests) in per_file)
    loads = facts.get("load_averages") or [0.0]
    yardstick = facts.get("yardstick_s")
    ci = ""
    if yardstick and facts.get("ci_seconds"):
        ci = (
            f" `.ci/run` on a fresh clone, install included: **{facts['ci_seconds']} s = "
            f"{facts['ci_seconds'] / yardstick:.0f} yardsticks** (yardstick {yardstick} s"
            f"{measured_at(facts.get('yardstick_runs_s', []))})."
        )

    def row(name: str, tests: int, seconds: float) -> str:
        measured = f" {seconds / yardstick:.1f} |" if yardstick else ""
        return f"| {name} | {tests} | {seconds:.0f} |{measured}"

    lines = [
        f"Measured by `lakehouse test` on commit {facts.get('commit', '?')}, "
        f"{facts.get('finished', '?')}: {facts.get('cores', '?')} cores, "
        f"load average (1 min) {min(loads):.1f}-{max(loads):.1f} during the run, "
        f"**{facts.get('seconds', 0):.0f} s** for the whole command "
        f"(pytest {facts.get('pytest_seconds', 0):.0f} s, the linters beside it).{ci} "
        "Written by `lakehouse test-times`.",
        "",
        "| file | tests | seconds |" + (" yardsticks |" if yardstick else ""),
        "|---|---:|---:|" + ("---:|" if yardstick else ""),
        *(row(f"`{name}`", tests, seconds) for name, (seconds, tests) in per_file),
        row("**all**", total_tests, total_seconds),
    ]
    return "\n".join(lines)


def measured_at(runs: list[float]) -> str:
    """How the yardstick was measured, when it was measured twice."""
    if len(runs) < 2:
        return ""
    return f": the mean of {runs[0]} s before the suite and {runs[1]} s after it"


def record_ci(seconds: int) -> None:
    """`.ci/run`'s wall time beside the yardstick it measured, printed and kept with the
    run's facts. Measured before and after the suite, the yardstick is the mean of both: on
    a shared host one measure at the start was once 22% off the one at the end."""
    facts = json.loads(RUN_FACTS.read_text()) if RUN_FACTS.exists() else {}
    runs = [json.loads(path.read_text())["yardstick_s"] for path in (YARDSTICK, YARDSTICK_AFTER)
            if path.exists()]  # fmt: skip
    yardstick = round(sum(runs) / len(runs), 2)
    facts.update(ci_seconds=seconds, yardstick_s=yardstick, yardstick_runs_s=runs)
    RUN_FACTS.write_text(json.dumps(facts, indent=2))
    print(
        f"==> the suite, install included: {seconds} s = {seconds / yardstick:.0f} yardsticks "
        f"(this machine's yardstick: {yardstick} s{measured_at(runs)})"
    )


def write(doc: Path, text: str) -> None:
    page = doc.read_text()
    if START not in page or END not in page:
        raise SystemExit(f"{doc} has no {START} ... {END} section to write")
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{START}\n{text}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("lakehouse test-times", __doc__)
    parser.add_argument("--junit", type=Path, default=JUNIT)
    parser.add_argument("--facts", type=Path, default=RUN_FACTS)
    parser.add_argument("--doc", type=Path, default=DOC)
    parser.add_argument("--ci-seconds", type=int, help="record .ci/run's time and print it")
    args = parser.parse_args(argv)
    if args.ci_seconds is not None:
        record_ci(args.ci_seconds)
        return 0
    if not args.junit.exists():
        print(f"no pytest report at {args.junit}: run `lakehouse test` first", file=sys.stderr)
        return 1
    facts = json.loads(args.facts.read_text()) if args.facts.exists() else {}
    write(args.doc, table(args.junit, facts))
    print(f"wrote the per-file times into {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
