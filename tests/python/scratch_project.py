"""A throwaway dbt project that builds like the real one: the real `dbt_project.yml` model
configuration (Iceberg, table properties, post-hooks, maintenance policy), the real `macros/`
folder and the real profile, but its own models and snapshots. Tests use it to drive a
materialization through the project's macros without adding models to the warehouse.
`copy_project` copies the real project's dbt files instead, for a test that changes one."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from scripts.spark_config import PROJECT_DIR


def write_scratch_project(
    root: Path, models: dict[str, str], snapshots: dict[str, str] | None = None
) -> Path:
    """Write `models/` and `snapshots/` files under `root` beside a dbt_project.yml that
    reuses the real project's configuration and macros. Returns `root` for --project-dir."""
    config = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())
    config.pop("on-run-start", None)  # the landing zone is not this project's input
    config.update(
        {
            "model-paths": ["models"],
            "snapshot-paths": ["snapshots"],
            "macro-paths": [str(PROJECT_DIR / "macros")],  # the real macros, not a copy
            "test-paths": ["tests"],
            "clean-targets": ["target"],
        }
    )
    root.mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    for folder, files in (("models", models), ("snapshots", snapshots or {})):
        (root / folder).mkdir(exist_ok=True)
        for name, text in files.items():
            (root / folder / name).write_text(text)
    return root


def copy_project(root: Path, also: tuple[str, ...] = ()) -> Path:
    """A copy of the real project's dbt files (config, selectors, models, macros, snapshots,
    data tests, and the folders in `also`) under `root`, for a test to change one file of it
    and run it with --project-dir. Returns `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("dbt_project.yml", "selectors.yml"):
        shutil.copy(PROJECT_DIR / name, root / name)
    for folder in ("models", "macros", "snapshots", "tests/dbt", *also):
        shutil.copytree(PROJECT_DIR / folder, root / folder)
    return root
