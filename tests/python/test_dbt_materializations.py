"""dbt's materializations on Iceberg through the project's macros, on real tables:
an ordinary merge model (no `merge_delete_when`) gets dbt-spark's merge unchanged."""

from __future__ import annotations

import json

from scratch_project import write_scratch_project

PLAIN_MERGE = """
{{ config(schema='scratch_merge', unique_key='id', incremental_strategy='merge') }}
{% if var('round') == 1 %}
select 1 as id, 'first' as name union all select 2 as id, 'second' as name
{% else %}
select 2 as id, 'second, updated' as name union all select 3 as id, 'third' as name
{% endif %}
"""


def test_a_plain_merge_model_updates_and_inserts_on_its_second_run(spark, dbt, tmp_path):
    project = write_scratch_project(tmp_path, {"plain_merge.sql": PLAIN_MERGE})
    spark.sql("drop table if exists scratch_merge.plain_merge purge")
    for round_ in (1, 2):
        dbt(["run", "--project-dir", str(project), "--vars", json.dumps({"round": round_})])
    rows = spark.sql("select id, name from scratch_merge.plain_merge order by id").collect()
    assert [tuple(row) for row in rows] == [(1, "first"), (2, "second, updated"), (3, "third")]
    merge = (project / "target/run/lakehouse/models/plain_merge.sql").read_text()
    assert "merge into scratch_merge.plain_merge as DBT_INTERNAL_DEST" in merge
    assert "delete" not in merge.lower()
    # exactly dbt-spark's SQL: the override hands over to the adapter's own macro
    relations = (
        "api.Relation.create(schema='scratch_merge', identifier='plain_merge'), "
        "api.Relation.create(identifier='plain_merge__dbt_tmp'), 'id', none, none"
    )
    inline = (
        "{% if execute %}{{ spark__get_merge_sql(" + relations + ") == "
        "dbt.spark__get_merge_sql(" + relations + ") }}{% endif %}"
    )
    compiled = dbt(
        [
            "compile",
            "--project-dir",
            str(project),
            "--inline",
            inline,
            "--quiet",
            "--vars",
            json.dumps({"round": 2}),
        ]
    )
    assert compiled.result.results[0].node.compiled_code.strip() == "True"
