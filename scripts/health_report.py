"""Write the health of Iceberg tables as JSON and an HTML page with plots (PNG).

Reads only metadata tables (files, snapshots, manifests): data files and their sizes,
delete files by type, snapshots, manifests, and when maintenance last rewrote the table.
Run it before and after maintenance (`--before` the earlier JSON) to see the difference.

    python -m scripts.health_report                          # every table in ods, dwd, dws
    python -m scripts.health_report --tables dwd.dim_users --before results/health/old/health.json
"""

from __future__ import annotations

import html
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

from scripts.cli import parser_from_doc

matplotlib.use("Agg")  # no screen here or in CI
import matplotlib.pyplot as plt
from pyspark.sql import SparkSession

LAYERS = ("ods", "dwd", "dws")
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


def plot(health: dict[str, dict[str, Any]], path: Path) -> None:
    names = list(health)
    short = [n.split(".", 1)[1] for n in names]
    fig, axes = plt.subplots(2, 2, figsize=(13, 8))
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
    compared = " &mdash; compared with an earlier report" if before else ""
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Iceberg table health</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:4px 8px;border-bottom:1px solid #ddd;
text-align:right}}th:first-child{{text-align:left}}</style></head><body>
<h1>Iceberg table health</h1><p>{stamp}{compared}</p>
<table><tr><th>table</th>{head}</tr>{rows}</table><p><img src="{image}" alt="health plots"></p>
</body></html>"""


def write_report(
    spark: SparkSession, tables: list[str], out: Path, before: dict | None = None
) -> dict[str, dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    health = {table: table_health(spark, table) for table in tables}
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
    args = parser.parse_args(argv)
    from scripts.session import get_spark

    spark = get_spark(args.target)
    tables = args.tables or warehouse_tables(spark)
    if not tables:
        print("no Iceberg tables found: build the warehouse first (make build)", file=sys.stderr)
        return 1
    before = json.loads(args.before.read_text()) if args.before else None
    health = write_report(spark, tables, args.out, before)
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
