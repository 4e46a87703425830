"""docs/adding-a-source.md, followed literally: every code block of the page whose first line
names a file is written into a scratch copy of the project (a block that says `add to:` is
inserted into that file), two batches of a new `forum.comment_changes` changelog are landed
(inserts, an update, a delete, a malformed line, a line without its key, a value that
is not its declared type), with a `social.follow_changes` changelog keyed by two columns beside
it (a delete re-inserted later, a line missing half its key, a key part that does not cast,
a re-delivered offset), and the scratch project is built after each, under its own schemas
(var schema_prefix), then checked as the page says (`dbt show`, the conventions gate). The
expectations are computed here from the landed lines, not by the models. When the page goes
stale, this fails.
Two builds: the scratch project's own warehouse, beside the others in this test run.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml
from scratch_project import copy_project

from scripts.landing import LandingZone
from scripts.spark_config import PROJECT_DIR

PAGE = PROJECT_DIR / "docs" / "adding-a-source.md"
PREFIX = "newsrc_"
FOLDER = "forum_comments"
VARS = {"schema_prefix": PREFIX, "write_audit_publish": True}  # as a scheduled build, selected
DERIVED_CHECKS = ("declared_landing_source", "known_reject_reason")  # the quarantine's tests
# the page's models and everything upstream of the quarantine and its checks
BUILD = [
    "--select", "+dim_comments", "+dws_video__daily_comments", "+dws_user__daily_follows",
    "+dwd_quarantine__rejected_records+",
    "+ods_landing__files+", "+ods_landing__undeclared_fields+",
    "--indirect-selection", "cautious",  # tests whose parents are all built
]  # fmt: skip
BLOCK = re.compile(r"^```[a-z]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
FILE_MARKER = re.compile(r"^(?:#|--) (file|add to): (\S+)\n")


def apply_page(project: Path, page: str) -> list[str]:
    """Write the page's file blocks into `project`; returns the files written or edited."""
    touched = []
    for block in BLOCK.findall(page):
        marker = FILE_MARKER.match(block)
        if not marker:
            continue
        kind, path = marker.groups()
        text, target = block[marker.end() :], project / path
        if kind == "file":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        else:  # inserted above the macro's `return`
            source = target.read_text()
            anchor = source.index("    {{ return(models) }}")
            target.write_text(source[:anchor] + text + source[anchor:])
        touched.append(path)
    return touched


def change(
    op: str, comment_id: int | None, lsn: int, offset: int, body: str = "",
    created_at: str = "2026-01-01T10:00:00Z",
) -> str:  # fmt: skip
    record = {
        "op": op,
        "video_id": 7,
        "body": body,
        "created_at": created_at,
        "_source_lsn": lsn,
        "_source_committed_at": "2026-01-01T10:00:00Z",
        "_kafka_partition": 0,
        "_kafka_offset": offset,
    }
    if comment_id is not None:
        record["comment_id"] = comment_id
    return json.dumps(record)


NEXT_DAY = "2026-01-02T09:00:00Z"
BATCHES = {
    1: [
        change("+I", 1, 10, 1, "first"),
        change("+I", 2, 11, 2, "second"),
        change("+I", 3, 12, 3, "third", created_at=NEXT_DAY),  # the day's only comment
        '{"op": "+I", "comment_id": 4, "body": "cut off',  # malformed: unparseable_record
        change("+I", None, 13, 5, "no key"),  # missing_key
    ],
    2: [
        change("-U", 2, 20, 6, "second"),
        change("+U", 2, 21, 7, "second, edited")[:-1] + ', "edited_by": 42}',  # undeclared
        change("-D", 3, 22, 8, "third", created_at=NEXT_DAY),  # empties 2026-01-02
        change("+I", 5, 23, 9, "when?", created_at="yesterday"),  # not its declared type
    ],
}
EXPECTED_LIVE = {1: "first", 2: "second, edited"}  # 3 deleted; 4, 5 and the keyless never valid
# comments per (video, day) after each build, from the lines above (all on video 7)
EXPECTED_DAILY = {1: {(7, "2026-01-01"): 2, (7, "2026-01-02"): 1}, 2: {(7, "2026-01-01"): 2}}
EXPECTED_REJECTS = {
    BATCHES[1][3]: "unparseable_record",
    BATCHES[1][4]: "missing_key",
    BATCHES[2][3]: "invalid_created_at",  # the column's meta.type, from the declaration
}


# The composite-key source of the page's step 5: who follows whom, keyed by the pair.
FOLLOWS = "social_follows"
DAY_1, DAY_2 = "2026-01-01T08:00:00Z", "2026-01-02T08:00:00Z"


def follow(
    op: str, follower: object, followee: object, lsn: int, offset: int,
    followed_at: str = DAY_1, is_muted: bool = False,
) -> str:  # fmt: skip
    record = {"op": op, "follower_id": follower, "followee_id": followee, "is_muted": is_muted,
              "followed_at": followed_at, "_source_lsn": lsn,
              "_source_committed_at": "2026-01-02T09:00:00Z",
              "_kafka_partition": 1, "_kafka_offset": offset}  # fmt: skip
    return json.dumps({k: v for k, v in record.items() if v is not None})


FOLLOW_BATCHES = {
    1: [
        follow("+I", 1, 2, 10, 1),
        follow("+I", 1, 3, 11, 2),
        follow("+I", 4, 2, 12, 3, followed_at=DAY_2),  # the day's only follow
        follow("-D", 1, 3, 13, 4),  # deleted here, inserted again in batch 2
        '{"op": "+I", "follower_id": 9, "followee_id',  # malformed: unparseable_record
        follow("+I", 5, None, 14, 5),  # half its key: missing_key
        follow("+I", 6, 2, 15, 6, followed_at="yesterday"),  # not its declared type
    ],
    2: [
        follow("-U", 1, 2, 20, 7),
        follow("+U", 1, 2, 21, 8, is_muted=True),
        follow("-D", 4, 2, 22, 9, followed_at=DAY_2),  # empties 2026-01-02
        follow("+I", 1, 3, 23, 10),  # the deleted pair back
        follow("+I", 1, 2, 10, 1),  # partition 1, offset 1 again: a re-delivery
        follow("+I", 7, "seven", 24, 11),  # a key part that does not cast: missing_key
    ],
}
# (follower, followee) -> is_muted after each build; (4, 2) deleted in batch 2
EXPECTED_FOLLOWS = {1: {(1, 2): False, (4, 2): False}, 2: {(1, 2): True, (1, 3): False}}
# follows per (followee, day) after each build
EXPECTED_DAILY_FOLLOWS = {
    1: {(2, "2026-01-01"): 1, (2, "2026-01-02"): 1},
    2: {(2, "2026-01-01"): 1, (3, "2026-01-01"): 1},
}
EXPECTED_FOLLOW_REJECTS = [
    (FOLLOW_BATCHES[1][4], "unparseable_record"),
    (FOLLOW_BATCHES[1][5], "missing_key"),
    (FOLLOW_BATCHES[1][6], "invalid_followed_at"),
    (FOLLOW_BATCHES[2][4], "redelivered_record"),
    (FOLLOW_BATCHES[2][5], "missing_key"),
]


class Scratch:
    def __init__(self, root: Path, dbt, spark) -> None:
        self.root, self._dbt, self.spark = root, dbt, spark
        self.project = copy_project(root / "project")
        self.touched = apply_page(self.project, PAGE.read_text())
        self.landing = LandingZone(root / "landing")
        (root / "landing").mkdir(exist_ok=True)

    def land(self, batch: int) -> None:
        for source, batches in ((FOLDER, BATCHES), (FOLLOWS, FOLLOW_BATCHES)):
            folder = self.landing.batch_folder(source, batch)
            self.landing.write_file(folder, "part-00000.jsonl", "\n".join(batches[batch]) + "\n")
            self.landing.mark_complete(folder)

    def dbt(self, *args: str, expect_success: bool = True):
        return self._dbt(
            [*args, "--project-dir", str(self.project), "--vars", json.dumps(VARS)],
            expect_success=expect_success,
            landing=self.root / "landing",
        )

    def rows(self, sql: str) -> list:
        return self.spark.sql(sql).collect()

    def daily_comments(self) -> dict:
        rows = self.rows(
            "select video_id, cast(comment_date as string), comment_count"
            f" from {PREFIX}dws.dws_video__daily_comments"
        )
        return {(r[0], r[1]): r[2] for r in rows}

    def daily_follows(self) -> dict:
        rows = self.rows(
            "select followee_id, cast(follow_date as string), follower_count"
            f" from {PREFIX}dws.dws_user__daily_follows"
        )
        return {(r[0], r[1]): r[2] for r in rows}

    def follows(self) -> dict:
        rows = self.rows(
            f"select follower_id, followee_id, is_muted from {PREFIX}dwd.dim_follows__state"
            " where not _is_deleted"
        )
        return {(r[0], r[1]): r[2] for r in rows}

    def complete_through(self, table: str) -> str | None:
        """The table's newest completeness stamp on main (docs/completeness.md)."""
        rows = self.rows(
            f"select summary['lakehouse.complete-through'] from {table}.snapshots"
            " where summary['lakehouse.complete-through'] is not null"
            " order by committed_at desc limit 1"
        )
        return rows[0][0] if rows else None


@pytest.fixture(scope="module")
def scratch(dbt, spark, tmp_path_factory) -> dict:
    built = Scratch(tmp_path_factory.mktemp("new_source"), dbt, spark)
    runs, daily, follows, daily_follows = [], {}, {}, {}
    for batch in (1, 2):  # the second build reads batch 1 again from the landing zone
        built.land(batch)
        runs.append(built.dbt("build", *BUILD))
        daily[batch], follows[batch] = built.daily_comments(), built.follows()
        daily_follows[batch] = built.daily_follows()
    return {"built": built, "runs": runs, "daily": daily, "follows": follows,
            "daily_follows": daily_follows}  # fmt: skip


def test_the_page_names_every_file_a_source_needs(scratch):
    assert scratch["built"].touched == [
        "models/ods/forum/_forum__sources.yml",
        "models/ods/forum/ods_forum__comment_changes.sql",
        "models/dwd/dimensions/dwd_forum__comment_changes_checked.sql",
        "models/dwd/dimensions/dim_comments__state.sql",
        "models/dwd/dimensions/dim_comments.sql",
        "models/dws/dws_video__daily_comments.sql",
        "macros/landing/landed_sources.sql",
        "models/ods/forum/_forum__models.yml",
        "models/dwd/dimensions/_comments__models.yml",
        "models/dws/_comments__models.yml",
        "models/ods/social/_social__sources.yml",
        "models/ods/social/ods_social__follow_changes.sql",
        "models/dwd/dimensions/dwd_social__follow_changes_checked.sql",
        "models/dwd/dimensions/dim_follows__state.sql",
        "models/dws/dws_user__daily_follows.sql",
        "models/dwd/dimensions/_follows__models.yml",
        "macros/landing/landed_sources.sql",
    ]


def test_the_conventions_gate_finds_nothing_on_the_new_source(scratch):
    """A user who follows the page gets a green `make test`: the gate's findings on the
    scratch copy (descriptions, key tests of the persisted models)."""
    from scripts.conventions import findings

    found = findings(scratch["built"].project)
    assert found == [], [f"{f['check_run_id']}: {f['failure_message']}" for f in found]


def test_the_pages_check_runs_with_dbt_show(scratch):
    """Section 4's first check, as the page runs it: `dbt show --inline`."""
    built = scratch["built"]
    query = f"select count(*) as lines from {PREFIX}ods.ods_forum__comment_changes"
    shown = built.dbt("show", "--inline", query, "--output", "json")
    landed = sum(len(lines) for lines in BATCHES.values())
    assert f'"lines": {landed}' in shown.log, shown.log[-2000:]


def test_every_landed_line_is_in_ods_exactly_once(scratch):
    built = scratch["built"]
    landed = [line for batch in BATCHES.values() for line in batch]
    rows = built.rows(f"select _raw_line from {PREFIX}ods.ods_forum__comment_changes")
    assert sorted(r[0] for r in rows) == sorted(landed)  # batch 1 not loaded again


def test_bad_lines_are_quarantined_with_their_reason(scratch):
    rows = scratch["built"].rows(
        f"select raw_record, reject_reason from {PREFIX}dwd.dwd_quarantine__rejected_records"
        f" where source_table = '{FOLDER}'"
    )
    assert {r[0]: r[1] for r in rows} == EXPECTED_REJECTS
    assert len(rows) == len(EXPECTED_REJECTS)


def test_the_reconciliation_and_quarantine_tests_ran_on_the_new_source(scratch):
    for run in scratch["runs"]:
        statuses = {r.node.name: r.status for r in run.result.results}
        assert statuses["assert_every_landed_line_is_placed"] == "pass", statuses
        checks = [name for name in statuses if name.startswith(DERIVED_CHECKS)]
        assert len(checks) == 2 and all(statuses[name] == "pass" for name in checks), statuses


def test_the_load_ledger_and_the_undeclared_fields_cover_the_new_source(scratch):
    built = scratch["built"]
    files = built.rows(
        f"select file_state, line_count from {PREFIX}ods.ods_landing__files"
        f" where source_table = '{FOLDER}'"
    )
    assert sorted(map(tuple, files)) == sorted(("loaded", len(lines)) for lines in BATCHES.values())
    fields = built.rows(
        f"select field_name, line_count from {PREFIX}ods.ods_landing__undeclared_fields"
        f" where source_table = '{FOLDER}'"
    )
    assert [tuple(r) for r in fields] == [("edited_by", 1)]


def test_no_freshness_warning_for_sources_whose_listing_has_it(scratch):
    """Freshness is the listing tables' (they have a loaded_at_field); declared on the whole
    source it made every build warn for each text table."""
    log = scratch["runs"][0].log
    assert "Running with dbt" in log or "Found" in log  # the parse's messages are captured
    assert "does not support metadata-based freshness" not in log


def test_updates_and_deletes_are_applied(scratch):
    rows = scratch["built"].rows(f"select comment_id, body from {PREFIX}dwd.dim_comments")
    assert {r[0]: r[1] for r in rows} == EXPECTED_LIVE


def test_the_daily_aggregate_follows_and_a_day_whose_last_comment_went_is_emptied(scratch):
    assert scratch["daily"] == EXPECTED_DAILY
    emptied = [
        line
        for line in scratch["runs"][1].log.splitlines()
        if "no row left for" in line and "dws_video__daily_comments" in line
    ]
    assert len(emptied) == 1 and "2026-01-02" in emptied[0], emptied


def test_the_new_tables_are_published_by_the_run(scratch):
    (tables,) = scratch["built"].rows(
        f"select tables from {PREFIX}ops.wap_runs where status = 'published'"
        " order by load_id desc limit 1"
    )[0]
    for name in ("ods_forum__comment_changes", "dim_comments__state", "dws_video__daily_comments"):
        assert name in tables, tables


def test_the_aggregate_is_complete_through_its_states_stamp(scratch):
    built = scratch["built"]
    # the newest commit time landed, less the project's allowance for late changes
    project = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())
    allowance = timedelta(days=project["vars"]["max_event_lateness_days"])
    landed = [line for lines in BATCHES.values() for line in lines if line.endswith("}")]
    newest = max(json.loads(line)["_source_committed_at"] for line in landed)
    expected = datetime.fromisoformat(newest) - allowance
    state = built.complete_through(f"{PREFIX}dwd.dim_comments__state")
    assert state is not None, "the state recorded no completeness watermark"
    assert datetime.fromisoformat(state).replace(tzinfo=expected.tzinfo) == expected, state
    assert built.complete_through(f"{PREFIX}dws.dws_video__daily_comments") == state


def test_the_new_tables_get_the_folders_properties(scratch):
    properties = {
        r[0]: r[1]
        for r in scratch["built"].rows(f"show tblproperties {PREFIX}dwd.dim_comments__state")
    }
    assert properties["format-version"] == "2"
    assert properties["write.merge.mode"] == "merge-on-read"


def test_a_composite_key_changelog_places_every_line_once(scratch):
    built = scratch["built"]
    landed = [line for batch in FOLLOW_BATCHES.values() for line in batch]
    rows = built.rows(f"select _raw_line from {PREFIX}ods.ods_social__follow_changes")
    assert sorted(r[0] for r in rows) == sorted(landed)
    rejected = built.rows(
        f"select raw_record, reject_reason from {PREFIX}dwd.dwd_quarantine__rejected_records"
        f" where source_table = '{FOLLOWS}'"
    )
    assert sorted(map(tuple, rejected)) == sorted(EXPECTED_FOLLOW_REJECTS)


def test_a_composite_key_state_follows_each_pair_and_a_deleted_pair_comes_back(scratch):
    """Both parts of the key tell the pairs apart: (1, 2) and (1, 3) share a follower, (1, 2)
    and (4, 2) a followee; (1, 3) is deleted in the first batch and inserted again in the
    second; (4, 2) stays a tombstone."""
    assert scratch["follows"] == EXPECTED_FOLLOWS
    (tombstones,) = scratch["built"].rows(
        f"select count(*) from {PREFIX}dwd.dim_follows__state where _is_deleted"
    )[0]
    assert tombstones == 1


def test_a_composite_key_aggregate_follows_and_empties_a_day(scratch):
    assert scratch["daily_follows"] == EXPECTED_DAILY_FOLLOWS
    emptied = [line for line in scratch["runs"][1].log.splitlines() if "no row left for" in line]
    assert any("dws_user__daily_follows" in line and "2026-01-02" in line for line in emptied)


def test_a_source_left_out_of_the_parser_list_stops_the_run_naming_the_line(
    dbt, spark, tmp_path_factory
):
    """Without the page's one-line addition to landed_source_models(), the quarantine does not
    compile: the new source's lines can never vanish from it unnoticed."""
    scratch = Scratch(tmp_path_factory.mktemp("new_source_unlisted"), dbt, spark)
    registry = scratch.project / "macros/landing/landed_sources.sql"
    registry.write_text((PROJECT_DIR / "macros/landing/landed_sources.sql").read_text())
    run = scratch.dbt(
        "compile", "--select", "dwd_quarantine__rejected_records", expect_success=False
    )
    assert not run.success
    expected = "landing source forum.comment_changes: add 'ods_forum__comment_changes'"
    assert f"{expected} to landed_source_models()" in run.log


def test_a_typed_model_that_is_more_than_its_macros_call_is_not_cached(
    dbt, spark, tmp_path_factory
):
    """The run's cache of typed rows renders the macro a typed model calls: a typed model that
    filters its call's rows would be cached with rows its readers never read, so only a model
    whose code is that one call is cached (the others' readers parse their lines)."""
    scratch = Scratch(tmp_path_factory.mktemp("new_source_typed"), dbt, spark)
    model = scratch.project / "models/dwd/dimensions/dwd_forum__comment_changes_checked.sql"
    code = model.read_text()
    call = "{{ typed_changelog('forum', 'comment_changes') }}"
    assert call in code
    model.write_text(code.replace(call, f"select * from ({call}) where comment_id <> 1"))
    cached = (  # depends_on_landed_sources: the refs typed_changelog renders
        "{{ depends_on_landed_sources() }}{% for s in declared_landed_sources() %}"
        "{{ s.typed }}={{ typed_landing_rows(s) is not none }};{% endfor %}"
    )
    run = scratch.dbt("compile", "--inline", cached)
    found = dict(re.findall(r"(\w+_checked)=(True|False);", run.log))
    assert found == {
        "dwd_appdb__user_changes_checked": "True",
        "dwd_appdb__video_changes_checked": "True",
        "dwd_client__events_checked": "True",
        "dwd_forum__comment_changes_checked": "False",
        "dwd_social__follow_changes_checked": "True",
    }, run.log[-2000:]


WRONG_KEYS = {  # the declared key -> what the compile error must say
    "": "social.follow_changes declares no meta.changelog_key",
    "[follower_id, followed_user]": "names followed_user, which is not a declared column",
    "[follower_id, _kafka_offset]": "names the change envelope's _kafka_offset",
}


def test_a_changelog_key_that_cannot_be_typed_stops_the_run_naming_source_and_fix(
    dbt, spark, tmp_path_factory
):
    """The typed model comes from the declaration: a key that is missing, names a column the
    source does not declare, or names a field of the change envelope does not compile, and
    the error names the source, the key and where the fix is."""
    scratch = Scratch(tmp_path_factory.mktemp("new_source_keys"), dbt, spark)
    sources = scratch.project / "models/ods/social/_social__sources.yml"
    declared = sources.read_text()
    line = "          changelog_key: [follower_id, followee_id]\n"
    assert line in declared
    for key, expected in WRONG_KEYS.items():
        wrong = f"          changelog_key: {key}\n" if key else ""
        sources.write_text(declared.replace(line, wrong))
        run = scratch.dbt("compile", "--select", "dim_follows__state", expect_success=False)
        assert not run.success, key
        assert expected in run.log and "docs/adding-a-source.md" in run.log, (key, run.log[-1500:])
