"""Which nodes write-audit-publish keeps on a run's branch, and the one statement that readies
the existing tables for the branch before the nodes write them (docs/write-audit-publish.md).

Plain functions of a node's parsed config, so they are unit-tested without Spark; the
adapter's `pre_model_hook` (impl.py) and the publish macros call them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

WRITING_RESOURCES = frozenset({"model", "snapshot", "seed"})
WRITING_MATERIALIZATIONS = frozenset({"table", "incremental", "snapshot", "seed"})


def writes_table(node: Any) -> bool:
    """Whether `node` (a parsed node, or its dict as in dbt's `graph`) writes an Iceberg table
    that a write-audit-publish run keeps on its branch: a model materialized as a table or
    incremental, a snapshot, a seed. Views and ephemeral models write no data."""
    if isinstance(node, Mapping):
        resource_type, config = node.get("resource_type"), node.get("config") or {}
    else:
        resource_type, config = getattr(node, "resource_type", None), getattr(node, "config", {})
    return (
        str(resource_type) in WRITING_RESOURCES
        and config.get("file_format") == "iceberg"
        and config.get("materialized") in WRITING_MATERIALIZATIONS
    )


def prepare_branch_sql(tables: Sequence[str], branch: str) -> str:
    """One statement for all of `tables` (dbt/include/lakehouse/java/lakehouse/TableState.java):
    each table gets write.wap.enabled if it was built before write-audit-publish (without it
    Iceberg writes main), and `branch` is created from main before the first write. Iceberg
    1.10.2 starts the summary totals of a snapshot that creates its branch from zero, and
    maintenance decides on those totals (docs/findings.md). A projection over one literal
    row runs on the driver (Spark evaluates it while planning), on a Thrift server too."""
    if not tables:
        raise ValueError("no table to prepare for the branch")
    calls = [f"reflect('lakehouse.TableState', 'prepareBranch', '{t}', '{branch}')" for t in tables]
    return f"select {', '.join(calls)} from values (1)"
