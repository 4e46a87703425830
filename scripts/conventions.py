"""The project's conventions, checked on dbt's manifest by dbt-bouncer (dbt-bouncer.yml):
a layer is a folder and a name prefix, only ODS reads a source, every model, snapshot and
source is described, every persisted model's key is tested, every macro and its arguments
are documented. Part of `lakehouse lint` (so of `make test`); docs/conventions.md.

    python -m scripts.conventions                 # this project
    python -m scripts.conventions --project-dir P # another dbt project (tests use a scratch one)

Parses the project with `dbt parse` into a temporary folder (no connection, no target/ of
yours touched) and runs `dbt-bouncer run` on that manifest; exits non-zero on any finding.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from scripts.cli import parser_from_doc
from scripts.spark_config import PROJECT_DIR, dbt_env

CONFIG = PROJECT_DIR / "dbt-bouncer.yml"


def findings(project_dir: Path = PROJECT_DIR) -> list[dict[str, str]]:
    """The failed checks of dbt-bouncer.yml on `project_dir`'s manifest: {check_run_id,
    failure_message, file_path, ...} each. Raises when dbt cannot parse the project."""
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="lakehouse-conventions-") as scratch:
        target = Path(scratch) / "target"
        parse = subprocess.run(
            [str(bin_dir / "dbt"), "parse", "--project-dir", str(project_dir),
             "--profiles-dir", str(PROJECT_DIR / "profiles"), "--target", "ci",
             "--target-path", str(target), "--log-path", str(Path(scratch) / "logs")],
            env={**os.environ, **dbt_env("ci")}, capture_output=True, text=True,
        )  # fmt: skip
        if parse.returncode != 0:
            raise RuntimeError(f"dbt parse of {project_dir} failed:\n{parse.stdout[-3000:]}")
        config = yaml.safe_load(CONFIG.read_text())
        config["dbt_artifacts_dir"] = str(target)
        report, bouncer = Path(scratch) / "report.json", Path(scratch) / "bouncer.yml"
        bouncer.write_text(yaml.safe_dump(config))
        subprocess.run(
            [str(bin_dir / "dbt-bouncer"), "run", "--config-file", str(bouncer),
             "--output-format", "json", "--output-file", str(report), "--show-all-failures"],
            cwd=project_dir, capture_output=True, text=True,
        )  # fmt: skip
        if not report.exists():
            raise RuntimeError("dbt-bouncer wrote no report: run it by hand to see why")
        return [r for r in json.loads(report.read_text()) if r["outcome"] != "success"]


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("conventions", __doc__)
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR)
    args = parser.parse_args(argv)
    found = findings(args.project_dir)
    for finding in found:
        print(f"{finding['file_path']}: {finding['check_run_id']}: {finding['failure_message']}")
    print(f"conventions (dbt-bouncer.yml): {len(found)} finding(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
