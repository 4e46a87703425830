"""Which maintenance steps an Iceberg table needs now, as plain functions of its policy and
of what was read from the table: no Spark and no dbt, so every threshold is unit-tested
(tests/python/test_maintenance_decision.py). The maintenance macros read the table, render
each step's SQL and act; these functions decide (docs/maintenance-decisions.md).

A decision reads in two stages. Every run makes the cheap read (the table's properties and
snapshot log: `commit_summary`); the full read (manifests: the health) is made only when a
counter says a threshold may be passed, when the table has no checkpoint yet, and nightly
(`needs_full_read`). Each step's trigger matches what its procedure then does, so a table
just maintained is healthy on the next run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STEPS = (
    "rewrite_data_files",
    "rewrite_position_delete_files",
    "rewrite_manifests",
    "compute_table_stats",
    "expire_snapshots",
    "remove_orphan_files",
)
# Each step's thresholds and their defaults: they steer the decision and are not passed to
# the step's procedure.
THRESHOLDS: dict[str, dict[str, float]] = {
    "rewrite_data_files": {"min_small_files": 5, "min_delete_files": 10, "min_delete_ratio": 0.05},
    "rewrite_position_delete_files": {"min_delete_files": 2},
    "rewrite_manifests": {"min_manifests": 50},
    "compute_table_stats": {"min_changed_ratio": 0.1},
    "expire_snapshots": {"slack_hours": 24},
    "remove_orphan_files": {},
}
SUMMARY_COUNTERS = (
    "total_data_files",
    "total_delete_files",
    "total_position_deletes",
    "total_equality_deletes",
    "total_records",
    "total_files_size",
)
HOUR_MS = 3_600_000


class PolicyError(ValueError):
    """A maintenance policy that cannot be applied; the message names the table and setting."""


@dataclass(frozen=True)
class Policy:
    """A table's maintenance policy, read and checked: the configured steps with the
    arguments for their procedures, and the thresholds of the decision."""

    steps: dict[str, dict[str, Any]]
    min_small_files: int
    min_delete_files: int
    min_delete_ratio: float
    min_surplus_deletes: int
    min_manifests: int
    min_changed_ratio: float
    window_hours: float
    retain_last: int
    slack_hours: float

    def has(self, step: str) -> bool:
        return step in self.steps


def read_policy(policy: dict[str, Any] | None, table: str) -> Policy:
    """The policy of `table` (its `maintenance` config), checked: an unknown step, a step
    that is not a mapping or a threshold that is not a number >= 0 raises PolicyError, on
    every run, not only on the day the step is due. Config values rendered from vars arrive
    as text."""
    policy = policy or {}
    unknown = [step for step in policy if step not in STEPS]
    if unknown:
        raise PolicyError(
            f"maintenance of {table}: unknown step '{unknown[0]}'; known: {', '.join(STEPS)}"
        )
    steps: dict[str, dict[str, Any]] = {}
    for step, config in policy.items():
        if not config:
            continue  # `step:` or `step: {}` leaves the step off, as no entry does
        if not isinstance(config, dict):
            raise PolicyError(
                f"maintenance of {table}: {step} must be a mapping of arguments, got {config}"
            )
        steps[step] = {k: v for k, v in config.items() if k not in THRESHOLDS[step]}

    def threshold(step: str, name: str) -> float:
        config = policy.get(step) or {}
        raw = config.get(name, THRESHOLDS[step][name])
        try:
            value = float(raw)
        except (TypeError, ValueError):
            value = -1.0
        if not value >= 0:
            raise PolicyError(
                f"maintenance of {table}: {step}.{name} must be a number >= 0,"
                f" got {config.get(name)}"
            )
        return value

    expire = policy.get("expire_snapshots") or {}
    return Policy(
        steps=steps,
        # at least 2: one small file alone is what a rewrite writes again
        min_small_files=max(int(threshold("rewrite_data_files", "min_small_files")), 2),
        # at least 2: in an unpartitioned table Iceberg keeps the newest equality-delete file
        # of a fold until a later commit; 1 would fold again
        min_delete_files=max(int(threshold("rewrite_data_files", "min_delete_files")), 2),
        min_delete_ratio=threshold("rewrite_data_files", "min_delete_ratio"),
        min_surplus_deletes=max(
            int(threshold("rewrite_position_delete_files", "min_delete_files")), 1
        ),
        min_manifests=int(threshold("rewrite_manifests", "min_manifests")),
        min_changed_ratio=threshold("compute_table_stats", "min_changed_ratio"),
        # the expiry procedure itself refuses a window or a count it cannot apply
        window_hours=_number(expire.get("older_than_hours", 72), 72.0),
        retain_last=int(_number(expire.get("retain_last", 10), 10)),
        slack_hours=threshold("expire_snapshots", "slack_hours"),
    )


def commit_summary(state: dict[str, Any], expire_before_ms: int) -> dict[str, Any]:
    """The cheap read, summed up from `state` (lakehouse.TableState's summary: the table's
    properties and, per snapshot, its commit time, operation and summary counters): the
    current snapshot's counters, snapshot counts for expiry (`expire_before_ms`: snapshots
    committed before it are expirable) and an upper bound of the data files any one
    partition gained since the last full read (the checkpoint in the table's properties)."""
    properties = state.get("properties") or {}
    current = str(properties.get("current-snapshot-id", "none"))
    if not current.lstrip("-").isdigit():
        return {"error": None, "current_snapshot_id": None, "properties": properties}
    checked_ms = _integer(properties.get("lakehouse.maintenance.checked-at-ms", -1), -1)
    summary: dict[str, Any] = {
        "snapshots": 0,
        "snapshots_before_cutoff": 0,
        "snapshots_since_check": 0,
        "partition_files_added_bound": 0,
        "oldest_snapshot_age_hours": 0.0,
        **dict.fromkeys(SUMMARY_COUNTERS, 0),
    }
    for snapshot in state.get("snapshots") or []:
        committed = snapshot["committed_ms"]
        added = snapshot.get("added_data_files") or 0
        if committed <= checked_ms:
            partition_files_added = 0
        elif snapshot.get("operation") == "append" or snapshot.get("replace_partitions"):
            # an append (or a dynamic partition overwrite, which replaces exactly the
            # partitions it writes) adds its files over changed-partition-count partitions,
            # so one partition gains at most added - changed + 1
            partition_files_added = max(
                added - (snapshot.get("changed_partition_count") or 1) + 1, 0
            )
        else:
            partition_files_added = added
        summary["snapshots"] += 1
        summary["snapshots_before_cutoff"] += committed < expire_before_ms
        summary["snapshots_since_check"] += committed > checked_ms
        summary["partition_files_added_bound"] += partition_files_added
        age_hours = (state["now_ms"] - committed) / HOUR_MS
        summary["oldest_snapshot_age_hours"] = max(age_hours, summary["oldest_snapshot_age_hours"])
        for counter in SUMMARY_COUNTERS:
            if snapshot.get(counter) is not None:
                summary[counter] = int(snapshot[counter])
    summary.update(
        error=None,
        current_snapshot_id=int(current),
        properties=properties,
        checked_at_ms=checked_ms,
    )
    return summary


def _bounds(policy: Policy, summary: dict[str, Any]) -> tuple[int, int]:
    """Upper bounds, from the cheap read, of the small files in any one partition and of the
    small manifests: the checkpoint's counts plus what the commits since could have added."""
    properties = summary["properties"]
    small = _integer(
        properties.get(
            "lakehouse.maintenance.max-small-files-in-partition", policy.min_small_files
        ),
        policy.min_small_files,
    )
    manifests = _integer(
        properties.get("lakehouse.maintenance.small-manifests", policy.min_manifests),
        policy.min_manifests,
    )
    return (
        small + summary["partition_files_added_bound"],
        manifests + 2 * summary["snapshots_since_check"],
    )


def needs_full_read(policy: Policy, summary: dict[str, Any], nightly: bool) -> bool:
    """Whether to read the table's manifests (its health): a file-level step is configured
    and it is the nightly run, the table has no checkpoint yet, or a counter of the cheap
    read says one of those steps' thresholds may be passed."""
    compact, deletes, manifests = (
        policy.has(s)
        for s in ("rewrite_data_files", "rewrite_position_delete_files", "rewrite_manifests")
    )
    if not (compact or deletes or manifests):
        return False
    small_bound, manifest_bound = _bounds(policy, summary)
    may_need = (
        (compact and small_bound >= policy.min_small_files)
        or (deletes and summary["total_delete_files"] >= policy.min_surplus_deletes + 1)
        or (manifests and manifest_bound >= policy.min_manifests)
    )
    return nightly or summary["checked_at_ms"] < 0 or may_need


def decide_steps(
    policy: Policy, summary: dict[str, Any], health: dict[str, Any] | None, nightly: bool
) -> list[dict[str, Any]]:
    """One entry per configured step, in the order they run: {step, due, reason, skip}
    (reason: why it is due; skip: the numbers that kept it from being due), and for
    rewrite_data_files `fold_deletes` (rewrite every file with deletes)."""
    small_bound, manifest_bound = _bounds(policy, summary)
    delete_files = summary["total_delete_files"]
    steps: list[dict[str, Any]] = []
    if policy.has("rewrite_data_files"):
        deleted_rows = summary["total_position_deletes"] + summary["total_equality_deletes"]
        records = summary["total_records"]
        ratio = deleted_rows / records if records > 0 else 0
        fold = delete_files > 0 and (
            delete_files >= policy.min_delete_files or ratio >= policy.min_delete_ratio
        )
        small = health["max_small_files_in_partition"] if health is not None else None
        crowded = small is not None and small >= policy.min_small_files
        small_text = small if small is not None else f"at most {small_bound}"
        reasons = (
            [f"small files {small_text} >= {policy.min_small_files} in a partition"]
            if crowded
            else []
        )
        if fold:
            reasons.append(
                f"{delete_files} delete files, {ratio:.4f} of rows deleted: folding deletes"
            )
        steps.append({
            "step": "rewrite_data_files",
            "due": fold or crowded,
            "fold_deletes": fold,
            "strategy": policy.steps["rewrite_data_files"].get("strategy") or "binpack",
            "reason": ", ".join(reasons),
            "skip": f"rewrite_data_files skipped ({small_text} < {policy.min_small_files}"
            f" small files per partition, {delete_files} < {policy.min_delete_files} delete files,"
            f" {ratio:.4f} < {policy.min_delete_ratio} of rows deleted)",
        })  # fmt: skip
    if policy.has("rewrite_position_delete_files"):
        surplus = health["surplus_position_delete_files"] if health is not None else 0
        steps.append({
            "step": "rewrite_position_delete_files",
            "due": surplus >= policy.min_surplus_deletes,
            "reason": f"{surplus} surplus position-delete files",
            "skip": "rewrite_position_delete_files skipped"
            f" ({surplus if health is not None else 'no'} surplus < {policy.min_surplus_deletes};"
            f" {delete_files} delete files)",
        })  # fmt: skip
    if policy.has("rewrite_manifests"):
        small_manifests = (
            health["small_manifests"] if health is not None else f"at most {manifest_bound}"
        )
        steps.append({
            "step": "rewrite_manifests",
            "due": health is not None and health["small_manifests"] >= policy.min_manifests,
            "reason": f"{small_manifests} small manifests",
            "skip": f"rewrite_manifests skipped ({small_manifests} < {policy.min_manifests}"
            " small manifests)",
        })  # fmt: skip
    if policy.has("compute_table_stats"):
        stats_records = summary["properties"].get("lakehouse.maintenance.stats-records")
        changed = None
        if stats_records is not None:
            base = _integer(stats_records, 0)
            changed = abs(summary["total_records"] - base) / max(base, 1)
        steps.append({
            "step": "compute_table_stats",
            "due": changed is None or changed >= policy.min_changed_ratio,
            "reason": "no statistics yet" if changed is None
            else f"{changed:.3f} of rows changed since the last statistics",
            "skip": f"compute_table_stats skipped ({changed or 0:.3f} < {policy.min_changed_ratio}"
            " of rows changed)",
        })  # fmt: skip
    if policy.has("expire_snapshots"):
        old = summary["snapshots_before_cutoff"]
        expirable = max(old - max(policy.retain_last - (summary["snapshots"] - old), 0), 0)
        window, slack = policy.window_hours, policy.slack_hours
        steps.append({
            "step": "expire_snapshots",
            "due": expirable > 0,
            "reason": f"{expirable} snapshots older than {window} h + {slack} h slack",
            "skip": f"expire_snapshots skipped ({summary['snapshots']} snapshots, oldest"
            f" {summary['oldest_snapshot_age_hours']:.1f} h;"
            f" keep {policy.retain_last} and {window} h,"
            f" act after {window + slack} h)",
        })  # fmt: skip
    if policy.has("remove_orphan_files") and nightly:
        steps.append({
            "step": "remove_orphan_files",
            "due": True,
            "reason": "nightly",
            "dry_run": policy.steps["remove_orphan_files"].get("dry_run"),
            "skip": "",
        })  # fmt: skip
    return steps


def _number(value: Any, default: float) -> float:
    """Jinja's `| float(default)`: the value as a number, else the default."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _integer(value: Any, default: int) -> int:
    """Jinja's `| int(default)`: the value as a whole number (text of a float truncated),
    else the default."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default
