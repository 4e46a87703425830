"""verify-time-travel at small size on the shared session, and proof that it can fail."""

from __future__ import annotations

from scripts import verify_time_travel as vt


def test_every_read_path_returns_what_was_written(spark):
    report = vt.verify_scripted(spark)
    assert report.failed == []
    assert vt.exit_code(report) == 0
    paths = {c.path for c in report.checks}
    assert {
        "sql VERSION AS OF",
        "option snapshot-id",
        "pyiceberg scan(snapshot_id)",
        "sql TIMESTAMP AS OF",
        "option as-of-timestamp",
        "option tag",
        "option branch",
    } <= paths
    skipped = next(c for c in report.checks if c.what == "incremental read across update/delete")
    assert "silently skipped" in skipped.detail


def test_a_wrong_expectation_fails_the_run(spark):
    table, commits, refs = vt.write_history(spark)
    commits[1].expected = vt.checksum([(4, "d")])  # claims the snapshot held one row
    report = vt.check_history(spark, table, commits, refs)
    assert vt.exit_code(report) == 1
    assert any("append 4-5" in c.what for c in report.failed)
