"""Which nodes write-audit-publish keeps on a run's branch, decided in Python
(dbt/adapters/lakehouse/write_audit_publish.py), and what another project writes to adopt it
(no Spark; under a second)."""

from __future__ import annotations

import pytest
import yaml

from dbt.adapters.lakehouse.write_audit_publish import prepare_branch_sql, writes_table
from scripts.spark_config import PROJECT_DIR

# the most a project writes in its dbt_project.yml to get the platform (using-the-adapter.md)
ADOPTION_LINES = 15


class Node:
    """A parsed node as dbt hands it to the adapter: attributes, a config with get()."""

    def __init__(self, resource_type: str, **config: str) -> None:
        self.resource_type, self.config = resource_type, dict(config)


@pytest.mark.parametrize(
    ("resource_type", "materialized", "file_format", "kept_on_branch"),
    [
        ("model", "incremental", "iceberg", True),
        ("model", "table", "iceberg", True),
        ("seed", "seed", "iceberg", True),
        ("snapshot", "snapshot", "iceberg", True),
        ("model", "view", "iceberg", False),  # a view writes no data
        ("model", "ephemeral", "iceberg", False),
        ("model", "table", "parquet", False),  # no branches outside Iceberg
        ("model", "table", None, False),
        ("test", "test", "iceberg", False),
        ("operation", "incremental", "iceberg", False),
    ],
)
def test_a_node_is_kept_on_the_branch_when_it_writes_an_iceberg_table(
    resource_type, materialized, file_format, kept_on_branch
):
    config = {"materialized": materialized, "file_format": file_format}
    assert writes_table(Node(resource_type, **config)) is kept_on_branch
    # the same node as a dict, as Jinja sees it in dbt's `graph`
    assert writes_table({"resource_type": resource_type, "config": config}) is kept_on_branch


def test_one_statement_readies_every_table_for_the_branch():
    sql = prepare_branch_sql(["shop.orders", "shop.customers"], "wap_7")
    assert sql.count("select ") == 1 and sql.endswith("from values (1)")
    assert "'lakehouse.TableState', 'prepareBranch', 'shop.orders', 'wap_7'" in sql
    assert "'lakehouse.TableState', 'prepareBranch', 'shop.customers', 'wap_7'" in sql
    with pytest.raises(ValueError, match="no table"):
        prepare_branch_sql([], "wap_7")


def test_another_project_adopts_the_platform_in_at_most_15_lines():
    """integration_tests/dbt_project.yml, every line counted but comments: its name and
    profile, the platform's two run hooks and its policy; no pre-hook."""
    path = PROJECT_DIR / "integration_tests" / "dbt_project.yml"
    lines = [
        line
        for line in path.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert len(lines) <= ADOPTION_LINES, "\n".join(lines)
    config = yaml.safe_load(path.read_text())
    assert "pre-hook" not in str(config), "a pre-hook the adapter should make unnecessary"
