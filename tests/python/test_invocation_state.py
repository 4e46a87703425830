"""What one node of an invocation resolves for a later node travels through named, typed
fields (dbt/adapters/lakehouse/invocation_state.py), one state per invocation: a command
never reads what another resolved (no Spark; under a second)."""

from __future__ import annotations

import re
from datetime import datetime

from dbt.adapters.lakehouse.invocation_state import CachedRows, HeldLock, InvocationStates
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


def test_the_noted_run_lock_counts_only_while_its_lease_lasts():
    """current_load_id uses the load id acquire_run_lock noted without reading the lock, but
    only before the lease ends: after it, another run may have taken the lock over."""
    lock = HeldLock(load_id=7, expires_at=datetime(2026, 12, 7, 3, 0, 0))
    assert lock.lasts(datetime(2026, 12, 7, 2, 59, 59))
    assert not lock.lasts(datetime(2026, 12, 7, 3, 0, 0))


def test_a_reader_reads_the_cache_alone_only_when_it_holds_all_the_reader_reads():
    """typed_rows reads the cache of load 8 alone when the reader reads the loads above 7 or
    later, or when ODS held no earlier load; a reader of older loads (a reader behind, a full
    refresh) reads the typed model below the load too."""
    cached = CachedRows("dwd__typed__this_run", 8)
    assert cached.covers(7) and cached.covers(8)
    assert not cached.covers(6) and not cached.covers(None) and not cached.covers(0)
    first_build = CachedRows("dwd__typed__this_run", 8, every_load=True)
    assert first_build.covers(None) and first_build.covers(0)
