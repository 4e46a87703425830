"""What one node of a dbt invocation resolves and a later node of the same invocation reads.

dbt renders every node in a fresh Jinja context, on one of several threads, so a value a
node resolved (a table's watermark, the run's caches) is gone by the next node. Here each
such value has a named, typed field, reached through the adapter's documented methods
(impl.py), one state per invocation: an in-process runner (dbtRunner, the tests) keeps the
adapter across commands, and one command never reads what another resolved.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class CachedRows:
    """An upstream model's rows of this run's load, cached for its readers: `relation`, a view
    in Spark's cache, holds its rows whose `_load_id` >= `load_id`; `every_load`: ODS held no
    earlier load when the cache was made (a first build), so the cache holds every row."""

    relation: str
    load_id: int
    every_load: bool = False

    def covers(self, after: int | None) -> bool:
        """Whether a reader of the loads above `after` (None: of every load) finds all its
        rows in the cache, and need not read the upstream below this run's load."""
        return self.every_load or (after is not None and int(after) + 1 >= self.load_id)


@dataclass(frozen=True)
class HeldLock:
    """The run lock as this invocation took it: the load id it handed out and when its lease
    ends (UTC). Another run can take the lock over only once the lease ended (or this process
    died), so until then the load id needs no read of the lock table."""

    load_id: int
    expires_at: datetime

    def lasts(self, now: datetime) -> bool:
        return now < self.expires_at


@dataclass
class InvocationState:
    # ops.wap_runs, the write-audit-publish run records: the highest load id of a published
    # run that tested every row it wrote (None: not read yet), and whether the table exists
    # with its `tested` column
    last_tested_load: int | None = None
    # the branch this run writes on (wap_begin), None when write-audit-publish is off
    wap_branch: str | None = None
    # the tables readied for that branch (write.wap.enabled, the branch created from main)
    branch_ready: set[str] = field(default_factory=set)
    # the run lock as acquire_run_lock took it, None before or once released
    run_lock: HeldLock | None = None
    run_records_ready: bool = False
    # upstream (its ref as rendered) -> its rows of this run's load, cached
    cached_rows: dict[str, CachedRows] = field(default_factory=dict)
    # relation -> what its node's rendering resolved for the node's own post-hooks
    node_values: dict[str, dict[str, Any]] = field(default_factory=dict)


class InvocationStates:
    """The state of the current invocation; the previous one's is dropped when a new one
    starts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._invocation: str | None = None
        self._state = InvocationState()

    def of(self, invocation: str) -> InvocationState:
        with self._lock:
            if invocation != self._invocation:
                self._invocation, self._state = invocation, InvocationState()
            return self._state
