"""verify-compaction at small size on the shared session, and proof that it can fail."""

from __future__ import annotations

import dataclasses

import pytest

from scripts import verify_compaction as vc


@pytest.fixture(scope="module")
def report(spark):
    return vc.verify(spark)


def result(report, key: str, use_starting: bool) -> dict:
    return next(
        r
        for r in report["results"]
        if r["scenario"] == key and r["use_starting_sequence_number"] is use_starting
    )


def test_every_outcome_is_as_documented_and_no_row_is_lost(report):
    assert len(report["results"]) == 2 * len(vc.SCENARIOS)
    assert vc.failures(report) == []
    assert vc.exit_code(report) == 0


def test_starting_sequence_number_keeps_the_equality_delete_in_force(report):
    kept = result(report, "3-eq-delete-in-compacted", True)
    assert kept["observed"] == vc.COMMITTED
    # b was the second commit: the compacted file keeps data sequence number 2, below the
    # delete's 3, so the delete still applies and the update wins on read
    assert [s["data_sequence_number"] for s in kept["new_file_sequence_numbers"]] == [2]
    assert kept["rows_observed"] == {1: "a2", 2: "b"}
    fresh = result(report, "3-eq-delete-in-compacted", False)
    assert fresh["observed"] == vc.REFUSED
    assert "Cannot commit, found new delete for replaced data file" in fresh["message"]


def test_position_deletes_always_conflict(report):
    for use_starting in (True, False):
        refused = result(report, "5-spark-mor-v2", use_starting)
        assert refused["observed"] == vc.REFUSED and "replaced data file" in refused["message"]


def test_bypassing_validation_shows_why_the_rule_exists(report):
    demos = {d["use_starting_sequence_number"]: d for d in report["resurrection_demo"]}
    assert demos[False]["deleted_row_resurrected"] is True
    assert demos[True]["deleted_row_resurrected"] is False
    assert demos[True]["rows_observed"] == {2: "b"}


def test_a_wrong_documented_outcome_fails_the_run(spark):
    wrong = dataclasses.replace(
        vc.SCENARIOS[2], iceberg_1_10_2={True: vc.REFUSED, False: vc.REFUSED}
    )
    report = vc.verify(spark, [wrong])
    assert vc.exit_code(report) == 1
    assert any("documented refused" in p for p in vc.failures(report))


def test_a_lost_row_fails_the_run(spark):
    def update_without_telling(lab):  # the expectation misses the concurrent change
        lab.table.upsert_with_equality_delete("id", [{"id": 1, "data": "zz"}])

    lying = dataclasses.replace(vc.SCENARIOS[2], concurrent=update_without_telling)
    report = vc.verify(spark, [lying])
    assert vc.exit_code(report) == 1
    assert any("rows" in p for p in vc.failures(report))
