"""The maintenance decisions as plain functions (dbt/adapters/lakehouse/maintenance.py): a
policy checked, the cheap read summed up, when the full read is made, and each step's
trigger. No Spark and no dbt: what a table reads is written here by hand, and each test
states the numbers a step is decided on. test_maintenance.py checks the same decisions on
real tables, with the procedures they trigger.
"""

from __future__ import annotations

import pytest

from dbt.adapters.lakehouse.maintenance import (
    HOUR_MS,
    PolicyError,
    commit_summary,
    decide_steps,
    needs_full_read,
    read_policy,
)

NOW_MS = 1_800_000_000_000
COMPACT = {"rewrite_data_files": {"strategy": "binpack", "min_small_files": "5"}}


def summary(**counters) -> dict:
    """A cheap read after a checkpoint, with `counters` changed."""
    found = {
        "snapshots": 3, "snapshots_before_cutoff": 0, "snapshots_since_check": 1,
        "partition_files_added_bound": 1, "oldest_snapshot_age_hours": 2.0,
        "total_data_files": 10, "total_delete_files": 0, "total_position_deletes": 0,
        "total_equality_deletes": 0, "total_records": 1000, "total_files_size": 10_000,
        "properties": {"lakehouse.maintenance.max-small-files-in-partition": "1",
                       "lakehouse.maintenance.small-manifests": "1"},
        "checked_at_ms": NOW_MS - HOUR_MS, "current_snapshot_id": 7, "error": None,
    }  # fmt: skip
    found.update(counters)
    return found


def health(small_files: int = 0, surplus: int = 0, manifests: int = 0) -> dict:
    return {"max_small_files_in_partition": small_files, "surplus_position_delete_files": surplus,
            "small_manifests": manifests}  # fmt: skip


def step(steps: list[dict], name: str) -> dict:
    return next(s for s in steps if s["step"] == name)


# --- the policy -----------------------------------------------------------------------------


def test_a_policy_keeps_the_procedures_arguments_and_reads_thresholds_given_as_text():
    policy = read_policy(
        COMPACT | {"expire_snapshots": {"older_than_hours": "48", "retain_last": 3}}, "t"
    )
    assert policy.steps["rewrite_data_files"] == {"strategy": "binpack"}  # threshold taken out
    assert policy.min_small_files == 5 and policy.min_delete_files == 10
    assert (policy.window_hours, policy.retain_last, policy.slack_hours) == (48.0, 3, 24.0)
    # a step left empty is off, as one left out
    assert read_policy({"expire_snapshots": None, "rewrite_manifests": {}}, "t").steps == {}


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"optimize": {}}, "maintenance of dwd.t: unknown step 'optimize'"),
        ({"rewrite_manifests": 50}, "rewrite_manifests must be a mapping of arguments, got 50"),
        (
            {"rewrite_data_files": {"min_small_files": "many"}},
            "min_small_files must be a number >= 0, got many",
        ),
        (
            {"compute_table_stats": {"min_changed_ratio": -0.1}},
            "min_changed_ratio must be a number >= 0",
        ),
    ],
)
def test_a_policy_that_cannot_be_applied_fails_naming_the_table_and_setting(policy, message):
    with pytest.raises(PolicyError, match=message.replace(".", r"\.")):
        read_policy(policy, "dwd.t")


def test_thresholds_that_would_repeat_a_rewrite_are_raised_to_the_least_that_does_not():
    """One small file is what a compaction writes again, and one delete file left after a
    fold would be folded again: a policy asking for 1 acts from 2."""
    asked = {"rewrite_data_files": {"min_small_files": 1, "min_delete_files": 1},
             "rewrite_position_delete_files": {"min_delete_files": 0}}  # fmt: skip
    policy = read_policy(asked, "t")
    assert (policy.min_small_files, policy.min_delete_files, policy.min_surplus_deletes) == (
        2,
        2,
        1,
    )


# --- the cheap read ---------------------------------------------------------------------------


def test_the_cheap_read_bounds_what_one_partition_gained_since_the_checkpoint():
    checked = NOW_MS - 10 * HOUR_MS
    state = {
        "now_ms": NOW_MS,
        "properties": {"current-snapshot-id": "42",
                       "lakehouse.maintenance.checked-at-ms": str(checked)},
        "snapshots": [
            # before the checkpoint: counted in the full read already
            {"committed_ms": checked - HOUR_MS, "operation": "append", "added_data_files": 50,
             "total_data_files": 50, "total_records": 500},
            # an append of 6 files over 3 partitions: one partition gained at most 4
            {"committed_ms": checked + HOUR_MS, "operation": "append", "added_data_files": 6,
             "changed_partition_count": 3, "total_data_files": 56, "total_records": 560},
            # a merge: any of its files may be in one partition
            {"committed_ms": checked + 2 * HOUR_MS, "operation": "overwrite", "added_data_files": 2,
             "total_data_files": 57, "total_delete_files": 1},
        ],
    }  # fmt: skip
    found = commit_summary(state, expire_before_ms=checked)
    assert found["partition_files_added_bound"] == 4 + 2
    assert (
        found["snapshots"],
        found["snapshots_before_cutoff"],
        found["snapshots_since_check"],
    ) == (3, 1, 2)
    # counters are the newest snapshot's that carries each
    assert (found["total_data_files"], found["total_records"], found["total_delete_files"]) == (
        57,
        560,
        1,
    )
    assert found["oldest_snapshot_age_hours"] == 11.0 and found["current_snapshot_id"] == 42


def test_a_table_without_a_snapshot_has_nothing_to_decide():
    found = commit_summary({"now_ms": NOW_MS, "properties": {}, "snapshots": []}, NOW_MS)
    assert found["current_snapshot_id"] is None and found["error"] is None


# --- when the full read is made ------------------------------------------------------------------


def test_the_full_read_waits_until_a_counter_may_pass_its_threshold():
    policy = read_policy(COMPACT, "t")
    # checkpoint 1 small file + at most 3 gained = 4 < 5: no manifest is read
    assert not needs_full_read(policy, summary(partition_files_added_bound=3), nightly=False)
    assert needs_full_read(policy, summary(partition_files_added_bound=4), nightly=False)
    # no checkpoint yet, or the nightly run: read
    assert needs_full_read(policy, summary(checked_at_ms=-1), nightly=False)
    assert needs_full_read(policy, summary(), nightly=True)
    # a policy without a file-level step never reads manifests
    expire_only = read_policy({"expire_snapshots": {"retain_last": 5}}, "t")
    assert not needs_full_read(expire_only, summary(checked_at_ms=-1), nightly=True)


def test_delete_files_and_manifests_have_their_own_gates():
    deletes = read_policy({"rewrite_position_delete_files": {"min_delete_files": 2}}, "t")
    assert not needs_full_read(deletes, summary(total_delete_files=2), nightly=False)
    assert needs_full_read(deletes, summary(total_delete_files=3), nightly=False)
    manifests = read_policy({"rewrite_manifests": {"min_manifests": 5}}, "t")
    # checkpoint 1 small manifest + 2 per commit since
    assert not needs_full_read(manifests, summary(snapshots_since_check=1), nightly=False)
    assert needs_full_read(manifests, summary(snapshots_since_check=2), nightly=False)


# --- each step's trigger -------------------------------------------------------------------------


def test_compaction_is_due_when_one_partition_holds_enough_small_files():
    policy = read_policy(COMPACT, "t")
    due = step(
        decide_steps(policy, summary(), health(small_files=5), nightly=False), "rewrite_data_files"
    )
    assert due["due"] and not due["fold_deletes"]
    assert due["reason"] == "small files 5 >= 5 in a partition"
    quiet = step(
        decide_steps(policy, summary(), health(small_files=4), nightly=False), "rewrite_data_files"
    )
    assert not quiet["due"]
    assert quiet["skip"] == ("rewrite_data_files skipped (4 < 5 small files per partition, 0 < 10"
                             " delete files, 0.0000 < 0.05 of rows deleted)")  # fmt: skip


def test_a_partition_of_one_small_file_is_never_compacted():
    """Asked to compact from 1 small file, a one-file partition would be rewritten into one
    small file again on every run (and conflict with every writer of that partition)."""
    policy = read_policy({"rewrite_data_files": {"min_small_files": 1}}, "t")
    steps = decide_steps(policy, summary(), health(small_files=1), nightly=False)
    assert not step(steps, "rewrite_data_files")["due"]
    assert step(
        decide_steps(policy, summary(), health(small_files=2), nightly=False), "rewrite_data_files"
    )["due"]


def test_deletes_are_folded_by_their_count_or_by_the_rows_they_delete():
    policy = read_policy(COMPACT, "t")
    by_count = step(
        decide_steps(policy, summary(total_delete_files=10), None, False), "rewrite_data_files"
    )
    assert by_count["due"] and by_count["fold_deletes"]
    by_rows = summary(total_delete_files=1, total_position_deletes=30, total_equality_deletes=20)
    folded = step(decide_steps(policy, by_rows, None, False), "rewrite_data_files")
    assert (
        folded["fold_deletes"]
        and folded["reason"] == "1 delete files, 0.0500 of rows deleted: folding deletes"
    )
    few = summary(total_delete_files=9, total_position_deletes=49)
    assert not step(decide_steps(policy, few, None, False), "rewrite_data_files")["due"]


def test_surplus_position_deletes_and_small_manifests_need_the_full_read():
    policy = read_policy({"rewrite_position_delete_files": {"min_delete_files": 2},
                          "rewrite_manifests": {"min_manifests": 3}}, "t")  # fmt: skip
    unread = decide_steps(policy, summary(total_delete_files=5), None, False)
    assert not any(s["due"] for s in unread)
    assert step(unread, "rewrite_position_delete_files")["skip"].startswith(
        "rewrite_position_delete_files skipped (no surplus < 2; 5 delete files)"
    )
    read = decide_steps(policy, summary(), health(surplus=2, manifests=3), False)
    assert (
        step(read, "rewrite_position_delete_files")["due"]
        and step(read, "rewrite_manifests")["due"]
    )
    assert not step(
        decide_steps(policy, summary(), health(surplus=1, manifests=2), False), "rewrite_manifests"
    )["due"]


def test_statistics_are_recomputed_when_enough_rows_changed_since_the_last():
    policy = read_policy({"compute_table_stats": {"min_changed_ratio": 0.1}}, "t")
    first = step(decide_steps(policy, summary(), None, False), "compute_table_stats")
    assert first["due"] and first["reason"] == "no statistics yet"
    stats_at = {"lakehouse.maintenance.stats-records": "1000"}

    def after(records: int) -> dict:
        read = summary(total_records=records, properties=stats_at)
        return step(decide_steps(policy, read, None, False), "compute_table_stats")

    assert after(1100)["due"]
    assert after(1100)["reason"] == "0.100 of rows changed since the last statistics"
    assert not after(1099)["due"]


def test_snapshots_expire_only_beyond_the_ones_kept():
    policy = read_policy({"expire_snapshots": {"older_than_hours": 72, "retain_last": 10}}, "t")
    # 12 snapshots, 5 older than the window: keeping the last 10 lets 2 of those go
    due = step(
        decide_steps(policy, summary(snapshots=12, snapshots_before_cutoff=5), None, False),
        "expire_snapshots",
    )
    assert due["due"] and due["reason"] == "2 snapshots older than 72.0 h + 24.0 h slack"
    kept = step(
        decide_steps(policy, summary(snapshots=10, snapshots_before_cutoff=5), None, False),
        "expire_snapshots",
    )
    assert not kept["due"]
    assert (
        kept["skip"] == "expire_snapshots skipped (10 snapshots, oldest 2.0 h; keep 10 and 72.0 h,"
        " act after 96.0 h)"
    )


def test_orphan_files_are_removed_only_by_the_nightly_run():
    policy = read_policy({"remove_orphan_files": {"dry_run": True}}, "t")
    assert decide_steps(policy, summary(), None, nightly=False) == []
    nightly = decide_steps(policy, summary(), None, nightly=True)
    assert nightly == [
        {
            "step": "remove_orphan_files",
            "due": True,
            "reason": "nightly",
            "dry_run": True,
            "skip": "",
        }
    ]
