"""Write the health of Iceberg tables as JSON and an HTML page with plots (PNG).

Reads only metadata tables (files, snapshots, manifests): data files and their sizes,
delete files by type, snapshots, manifests, and when maintenance last rewrote the table.
Run it before and after maintenance (`--before` the earlier JSON) to see the difference.
With the maintenance log (`ops.maintenance_log`, one row per table per maintenance run)
it also shows each table's trend over runs: files before and after, outcome, decision time.

    python -m scripts.health_report                          # every table in ods, dwd, dws
    python -m scripts.health_report --tables dwd.dim_users --before results/health/old/health.json
"""

from __future__ import annotations

import html
import json
import sys
from datetime import UTC, datetime
from math import nan
from pathlib import Path
from typing import Any

import matplotlib

from scripts.cli import parser_from_doc

matplotlib.use("Agg")  # no screen here or in CI
import matplotlib.pyplot as plt
from pyspark.sql import SparkSession

LAYERS = ("ods", "dwd", "dws")
MAINTENANCE_LOG = "ops.maintenance_log"  # written by the maintenance macros
RUNS_SHOWN = 30  # the most recent maintenance runs per table
SMALL_FILE_BYTES = 96 * 1024 * 1024  # 3/4 of the 128 MB target, as the maintenance macros


def warehouse_tables(spark: SparkSession) -> list[str]:
    names = []
    for layer in LAYERS:
        if spark.sql(f"show schemas like '{layer}'").count():
            names += [
                f"{layer}.{r.tableName}"
                for r in spark.sql(f"show tables in {layer}").collect()
                if not r.isTemporary
            ]
    return sorted(names)


def table_health(spark: SparkSession, table: str) -> dict[str, Any]:
    files = spark.sql(
        f"select content, file_size_in_bytes, record_count from {table}.files"
    ).collect()
    data_sizes = [f.file_size_in_bytes for f in files if f.content == 0]
    snapshots = spark.sql(
        f"select committed_at, operation from {table}.snapshots order by committed_at"
    ).collect()
    rewrites = [s.committed_at for s in snapshots if s.operation == "replace"]
    return {
        "data_files": len(data_sizes),
        "data_bytes": sum(data_sizes),
        "average_data_file_bytes": int(sum(data_sizes) / len(data_sizes)) if data_sizes else 0,
        "small_data_files": sum(1 for size in data_sizes if size < SMALL_FILE_BYTES),
        "data_file_sizes": sorted(data_sizes),
        "position_delete_files": sum(1 for f in files if f.content == 1),
        "equality_delete_files": sum(1 for f in files if f.content == 2),
        "deleted_records": sum(f.record_count for f in files if f.content != 0),
        "snapshots": len(snapshots),
        "snapshot_operations": {
            op: sum(1 for s in snapshots if s.operation == op)
            for op in sorted({s.operation for s in snapshots})
        },
        "oldest_snapshot_at": str(snapshots[0].committed_at) if snapshots else None,
        "manifests": spark.sql(f"select count(*) from {table}.manifests").first()[0],
        "last_maintenance_at": str(rewrites[-1]) if rewrites else None,
    }


def maintenance_runs(spark: SparkSession, tables: list[str], log: str) -> dict[str, list]:
    """The last RUNS_SHOWN rows of the maintenance log per table, oldest first ({} when
    there is no log yet)."""
    if not spark.catalog.tableExists(log):
        return {}
    names = ", ".join(f"'{t}'" for t in tables)
    rows = spark.sql(f"""
        select * from (
            select table_name, cast(logged_at as string) as logged_at, trigger, outcome,
                   data_files_before, data_files_after, delete_files_before, delete_files_after,
                   decision_read, decision_seconds, total_seconds, errors,
                   row_number() over (partition by table_name order by logged_at desc) as recent
            from {log} where table_name in ({names}))
        where recent <= {RUNS_SHOWN} order by table_name, logged_at""").collect()
    runs: dict[str, list] = {}
    for row in rows:
        entry = row.asDict()
        entry.pop("recent")
        runs.setdefault(entry.pop("table_name"), []).append(entry)
    return runs


def plot(health: dict[str, dict[str, Any]], path: Path) -> None:
    names = list(health)
    short = [n.split(".", 1)[1] for n in names]
    trends = any(health[n].get("maintenance_runs") for n in names)
    fig, grid = plt.subplots(3 if trends else 2, 2, figsize=(13, 12 if trends else 8))
    axes = grid
    axes[0, 0].barh(short, [health[n]["data_files"] for n in names], color="#4c72b0")
    axes[0, 0].set_title("data files")
    sizes = [[s / 1024 for s in health[n]["data_file_sizes"]] or [0] for n in names]
    axes[0, 1].boxplot(sizes, vert=False, tick_labels=short)
    axes[0, 1].set_xscale("log")
    axes[0, 1].set_title("data file size (KiB)")
    pos = [health[n]["position_delete_files"] for n in names]
    eq = [health[n]["equality_delete_files"] for n in names]
    axes[1, 0].barh(short, pos, label="position deletes", color="#dd8452")
    axes[1, 0].barh(short, eq, left=pos, label="equality deletes", color="#c44e52")
    axes[1, 0].legend()
    axes[1, 0].set_title("delete files by type")
    y = range(len(names))
    axes[1, 1].barh(
        [i - 0.2 for i in y],
        [health[n]["snapshots"] for n in names],
        0.4,
        label="snapshots",
        color="#55a868",
    )
    axes[1, 1].barh(
        [i + 0.2 for i in y],
        [health[n]["manifests"] for n in names],
        0.4,
        label="manifests",
        color="#8172b2",
    )
    axes[1, 1].set_yticks(list(y), short)
    axes[1, 1].legend()
    axes[1, 1].set_title("snapshots and manifests")
    if trends:
        for name, label in zip(names, short, strict=True):
            runs = health[name].get("maintenance_runs") or []
            if runs:
                files = [nan if (n := r["data_files_after"]) is None else n for r in runs]
                axes[2, 0].plot(files, marker="o", label=label)
                axes[2, 1].plot([r["decision_seconds"] for r in runs], marker=".", label=label)
        axes[2, 0].set_title("data files after maintenance, per run (maintenance log)")
        axes[2, 1].set_title("decision seconds, per run (maintenance log)")
        for ax in axes[2]:
            ax.set_xlabel("run (oldest first)")
            ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


COLUMNS = [
    "data_files",
    "small_data_files",
    "data_bytes",
    "average_data_file_bytes",
    "position_delete_files",
    "equality_delete_files",
    "deleted_records",
    "snapshots",
    "manifests",
    "last_maintenance_at",
]


def render_html(health: dict, before: dict | None, image: str) -> str:
    def cell(table: str, column: str) -> str:
        now = health[table][column]
        then = (before or {}).get(table, {}).get(column)
        text = f"{then} &rarr; {now}" if before is not None and then != now else f"{now}"
        return f"<td>{html.escape(text, quote=False).replace('&amp;rarr;', '&rarr;')}</td>"

    rows = "".join(
        f"<tr><th>{html.escape(t)}</th>{''.join(cell(t, c) for c in COLUMNS)}</tr>" for t in health
    )
    head = "".join(f"<th>{c.replace('_', ' ')}</th>" for c in COLUMNS)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    runs = "".join(
        f"<tr><th>{html.escape(t)}</th><td>{html.escape(str(r['logged_at']))}</td>"
        f"<td>{html.escape(str(r['trigger']))}</td><td>{html.escape(str(r['outcome']))}</td>"
        f"<td>{r['data_files_before']} &rarr; {r['data_files_after']}</td>"
        f"<td>{r['delete_files_before']} &rarr; {r['delete_files_after']}</td>"
        f"<td>{r['decision_seconds']:.2f} ({html.escape(str(r['decision_read']))})</td>"
        f"<td>{html.escape(str(r['errors'] or ''))}</td></tr>"
        for t in health
        for r in health[t].get("maintenance_runs") or []
    )
    trend = (
        "<h2>maintenance runs</h2><table><tr><th>table</th><th>logged at</th><th>trigger</th>"
        "<th>outcome</th><th>data files</th><th>delete files</th><th>decision s</th>"
        f"<th>errors</th></tr>{runs}</table>"
        if runs
        else ""
    )
    compared = " &mdash; compared with an earlier report" if before else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Iceberg table health</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:4px 8px;border-bottom:1px solid #ddd;
text-align:right}}th:first-child{{text-align:left}}</style></head><body>
<h1>Iceberg table health</h1><p>{stamp}{compared}</p>
<table><tr><th>table</th>{head}</tr>{rows}</table>{trend}
<p><img src="{image}" alt="health plots"></p>
</body></html>"""


def write_report(
    spark: SparkSession,
    tables: list[str],
    out: Path,
    before: dict | None = None,
    log: str = MAINTENANCE_LOG,
) -> dict[str, dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    health = {table: table_health(spark, table) for table in tables}
    for table, runs in maintenance_runs(spark, tables, log).items():
        health[table]["maintenance_runs"] = runs
    (out / "health.json").write_text(json.dumps(health, indent=2))
    plot(health, out / "health.png")
    (out / "health.html").write_text(render_html(health, before, "health.png"))
    return health


def main(argv: list[str] | None = None) -> int:
    parser = parser_from_doc("health-report", __doc__)
    parser.add_argument("--target", default="local")
    parser.add_argument("--tables", nargs="*", help="schema.table ... (default: every layer table)")
    parser.add_argument("--out", type=Path, default=Path("results/health/latest"))
    parser.add_argument("--before", type=Path, help="an earlier health.json to compare with")
    parser.add_argument("--maintenance-log", default=MAINTENANCE_LOG, help="schema.table")
    args = parser.parse_args(argv)
    from scripts.session import get_spark

    spark = get_spark(args.target)
    tables = args.tables or warehouse_tables(spark)
    if not tables:
        print("no Iceberg tables found: build the warehouse first (make build)", file=sys.stderr)
        return 1
    before = json.loads(args.before.read_text()) if args.before else None
    health = write_report(spark, tables, args.out, before, args.maintenance_log)
    for table, h in health.items():
        was = (before or {}).get(table)
        change = f" (was {was['data_files']} files, {was['snapshots']} snapshots)" if was else ""
        print(
            f"{table:<42} {h['data_files']:>5} data files {h['data_bytes']:>12,} B, "
            f"{h['position_delete_files'] + h['equality_delete_files']:>3} delete files, "
            f"{h['snapshots']:>3} snapshots, {h['manifests']:>3} manifests{change}"
        )
    print(f"wrote {args.out / 'health.html'}, health.png and health.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
