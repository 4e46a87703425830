"""docs/a-scheduled-run.md is the page a newcomer follows to predict what a scheduled run
does. It stays true to the project: every hook dbt_project.yml runs is on it, the run's own
hooks in the order dbt runs them, and every file it links exists (no Spark; under a second)."""

from __future__ import annotations

import re

import yaml

from scripts.spark_config import PROJECT_DIR

PAGE = PROJECT_DIR / "docs" / "a-scheduled-run.md"
HOOK_CALL = re.compile(r"\{\{\s*(\w+)\s*\(")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def hook_macros(hooks: str | list[str] | None) -> list[str]:
    """The macros a hook entry calls, in order."""
    if hooks is None:
        return []
    entries = [hooks] if isinstance(hooks, str) else hooks
    return [name for entry in entries for name in HOOK_CALL.findall(entry)]


def node_hooks(config: dict) -> list[str]:
    """Every +pre-hook and +post-hook macro under a models: or snapshots: block, any depth."""
    found: list[str] = []
    for key, value in config.items():
        if key in ("+pre-hook", "+post-hook", "pre-hook", "post-hook"):
            found += hook_macros(value)
        elif isinstance(value, dict):
            found += node_hooks(value)
    return found


def project() -> dict:
    return yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())


def test_the_page_names_every_hook_the_project_runs():
    config = project()
    hooks = set(hook_macros(config["on-run-start"]) + hook_macros(config["on-run-end"]))
    hooks |= set(node_hooks(config.get("models", {})) + node_hooks(config.get("snapshots", {})))
    assert {"acquire_run_lock", "wap_publish", "iceberg_maintenance"} <= hooks  # read right
    text = PAGE.read_text()
    missing = sorted(name for name in hooks if not re.search(rf"\b{name}\b", text))
    assert missing == [], f"hooks of dbt_project.yml missing from {PAGE.name}"


def test_the_page_lists_the_runs_hooks_in_the_order_dbt_runs_them():
    config = project()
    text = PAGE.read_text()
    for phase in ("on-run-start", "on-run-end"):
        names = hook_macros(config[phase])
        where = [text.find(f"`{name}`") for name in names]
        assert -1 not in where, (phase, dict(zip(names, where, strict=True)))
        assert where == sorted(where), f"{phase}: the page's order is not {names}"


def test_every_file_the_page_links_exists():
    links = LINK.findall(PAGE.read_text())
    assert len(links) >= 5
    missing = [link for link in links if "://" not in link and not (PAGE.parent / link).exists()]
    assert missing == []
