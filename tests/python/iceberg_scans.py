"""What a query read, from Iceberg's own scan metrics (files planned after pruning)."""

from __future__ import annotations

from collections import Counter


def scanned_files(spark, sql: str) -> Counter:
    """Run `sql` and return, per Iceberg table, the data files its scans planned (Iceberg's
    resultDataFiles metric, after partition and column-metrics pruning), summed over scans."""
    return Counter({table: sum(files) for table, files in files_per_scan(spark, sql).items()})


def files_per_scan(spark, sql: str) -> dict[str, list[int]]:
    """Run `sql` and return, per Iceberg table, the data files each of its scans planned."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")  # a plain plan to walk
    try:
        frame = spark.sql(sql)
        frame.collect()
        plan = frame._jdf.queryExecution().executedPlan()
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    files: dict[str, list[int]] = {}
    pending = [plan]
    while pending:
        node = pending.pop()
        children = node.children()
        pending += [children.apply(i) for i in range(children.size())]
        if node.nodeName().startswith("BatchScan"):
            metric = node.metrics().get("resultDataFiles")
            table = node.nodeName().removeprefix("BatchScan ").strip()
            planned = int(metric.get().value()) if metric.isDefined() else 0
            files.setdefault(table, []).append(planned)
    return files


def data_files(spark, table: str, where: str = "true") -> int:
    return spark.sql(f"select count(*) from {table}.files where content = 0 and {where}").first()[0]
