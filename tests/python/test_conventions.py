"""The conventions gate (scripts/conventions.py, dbt-bouncer.yml): `lakehouse lint` runs it on
the project in every `make test`. Here, on a scratch project that breaks each convention
once beside a model that keeps them all, it names every break and nothing else: the gate
can fail, and fails for the right reason. Beside it, one convention dbt does not see: no
tracked file cites an issue by its number."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from scripts.conventions import findings
from scripts.spark_config import PROJECT_DIR
from tests.python.scratch_project import write_scratch_project

GOOD = "select 1 as order_id from {{ source('shop', 'orders') }}"
MODELS = {
    "ods/ods_shop__orders.sql": GOOD,
    "dwd/orders.sql": "select * from {{ ref('ods_shop__orders') }}",  # no layer prefix
    "dws/dws_from_source.sql": GOOD.replace("1 as order_id", "1 as day"),  # skips ODS
    "dws/dws_undescribed.sql": "select * from {{ ref('ods_shop__orders') }}",
    "staging/stg_orders.sql": "select * from {{ ref('ods_shop__orders') }}",  # no such layer
}
PROPERTIES = {
    "version": 2,
    "sources": [
        {"name": "shop", "schema": "shop", "tables": [{"name": "orders"}]},  # undescribed
    ],
    "models": [
        {
            "name": "ods_shop__orders",
            "description": "Orders as landed.",
            "columns": [{"name": "order_id", "data_tests": ["unique"]}],
        },
        {
            "name": "orders",
            "description": "Orders.",
            "columns": [{"name": "order_id", "data_tests": ["unique"]}],
        },
        {
            "name": "dws_from_source",
            "description": "Orders per day.",
            "columns": [{"name": "day", "data_tests": ["unique"]}],
        },
        {
            "name": "stg_orders",
            "description": "Orders.",
            "columns": [{"name": "order_id", "data_tests": ["unique"]}],
        },
    ],
    "macros": [
        {
            "name": "half_documented",
            "description": "Documented, but one of its arguments is not.",
            "arguments": [{"name": "first", "description": "The first."}],
        },
    ],
}
MACROS = """
{% macro undocumented() %}select 1{% endmacro %}
{% macro half_documented(first, second) %}select 1{% endmacro %}
"""


def test_the_gate_names_every_broken_convention_and_nothing_else(tmp_path: Path):
    root = write_scratch_project(tmp_path / "project", {})
    for name, sql in MODELS.items():
        (root / "models" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "models" / name).write_text(sql)
    (root / "models" / "_models.yml").write_text(yaml.safe_dump(PROPERTIES, sort_keys=False))
    config = yaml.safe_load((root / "dbt_project.yml").read_text())
    config["macro-paths"].append("macros")  # the scratch project's own macros, besides the real
    (root / "dbt_project.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "macros").mkdir()
    (root / "macros" / "scratch.sql").write_text(MACROS)

    found = {
        (f["check_run_id"].split(":")[0], f["check_run_id"].split(":")[-1]) for f in findings(root)
    }
    assert found == {
        ("check_model_names", "orders"),
        ("check_lineage_source_cannot_be_used", "dws_from_source"),
        ("check_model_description_populated", "dws_undescribed"),
        ("check_model_has_unique_test", "dws_undescribed"),
        ("check_model_directories", "stg_orders"),
        ("check_source_description_populated", "shop_orders"),
        ("check_macro_description_populated", "undocumented"),
        ("check_macro_arguments_description_populated", "half_documented"),
    }


CITATION = re.compile(r"\bissues? #\d+|\(#\d+\)", re.IGNORECASE)


def test_no_file_cites_an_issue_a_reader_cannot_open():
    """A reader has only the repository: docs and code explain themselves, never by the
    number of an issue or a note of past work."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.md", "*.py", "*.sql", "*.yml", "*.java", "*.toml", "Makefile"],
        cwd=PROJECT_DIR, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert len(tracked) > 100, tracked  # the listing worked
    cited = [
        f"{name}:{number}: {line.strip()}"
        for name in tracked
        for number, line in enumerate((PROJECT_DIR / name).read_text().splitlines(), 1)
        if CITATION.search(line)
    ]
    assert cited == [], "\n".join(cited)
