"""What one node of an invocation resolves for a later node travels through named, typed
fields (dbt/adapters/lakehouse/invocation_state.py), one state per invocation: a command
never reads what another resolved (no Spark; under a second)."""

from __future__ import annotations

import re

from dbt.adapters.lakehouse.invocation_state import CachedRows, InvocationStates
from scripts.spark_config import PROJECT_DIR


def test_a_new_invocation_starts_from_nothing_and_the_same_one_keeps_its_values():
    states = InvocationStates()
    first = states.of("invocation-1")
    first.last_tested_load = 7
    first.cached_rows["__dbt__cte__typed"] = CachedRows("global_temp.dwd__typed__this_run", 8)
    first.node_values["dwd.changes"] = {"head": 1}
    assert states.of("invocation-1") is first
    second = states.of("invocation-2")
    assert second.last_tested_load is None and not second.run_records_ready
    assert second.cached_rows == {} and second.node_values == {}


def test_no_macro_passes_values_through_a_dict_keyed_by_strings():
    """The shared per-invocation dict is gone, and no macro builds a key from the invocation
    id to find a value again."""
    pattern = re.compile(r"per_invocation|invocation_id\s*~\s*'[^']*:")
    found = [
        f"{path.relative_to(PROJECT_DIR)}: {match.group(0)}"
        for root in (PROJECT_DIR / "macros", PROJECT_DIR / "dbt" / "include" / "lakehouse")
        for path in sorted(root.rglob("*.sql"))
        for match in pattern.finditer(path.read_text())
    ]
    assert found == []
