"""Data files every query of this session planned, per Iceberg table: Iceberg's own
`resultDataFiles` scan metric (after partition and column-metrics pruning), read from each
finished query's physical plan by a Spark QueryExecutionListener written in Python (py4j
calls it back). The same metric tests/python/test_incremental_cost.py reads, taken here from
the real run, so the watermark queries dbt sends before a model's SQL count too.

Spark delivers listener events asynchronously: `drain()` waits for the listener bus to be
empty before the counts are read, so a count belongs to the queries sent before it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any, ClassVar

from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import SparkSession


def plan_nodes(plan: Any) -> Iterator[Any]:
    """Every node of a physical plan, adaptive query stages included."""
    pending = [plan]
    while pending:
        node = pending.pop()
        name = str(node.nodeName())
        if name.startswith("AdaptiveSparkPlan"):
            pending.append(node.executedPlan())
            continue
        if "QueryStage" in name:
            pending.append(node.plan())
            continue
        children = node.children()
        pending += [children.apply(i) for i in range(children.size())]
        yield node


def plan_scans(plan: Any) -> Counter:
    """resultDataFiles per table of every Iceberg batch scan in a physical plan."""
    files: Counter = Counter()
    for node in plan_nodes(plan):
        name = str(node.nodeName())
        if name.startswith("BatchScan"):
            metric = node.metrics().get("resultDataFiles")
            table = name.removeprefix("BatchScan ").strip()
            files[table] += int(metric.get().value()) if metric.isDefined() else 0
    return files


def plan_shuffles(plan: Any) -> int:
    """Shuffle exchanges of a physical plan (a join of co-partitioned sides has none)."""
    return sum(1 for node in plan_nodes(plan) if str(node.nodeName()).startswith("Exchange"))


class ScanCounter:
    """Registered on a session while in use (`with ScanCounter(spark) as scans:`)."""

    def __init__(self, spark: SparkSession):
        self.spark = spark
        self._files: Counter = Counter()
        self._shuffles = 0
        self._lock = threading.Lock()
        self.errors: list[str] = []

    # -- QueryExecutionListener (called from the JVM) ----------------------------------------

    def onSuccess(self, func_name: str, execution: Any, duration_ns: int) -> None:
        try:
            found = plan_scans(execution.executedPlan())
            shuffles = plan_shuffles(execution.executedPlan())
        except Exception as error:  # a listener must never fail the query it observes
            self.errors.append(f"{func_name}: {error}")
            return
        with self._lock:
            self._files.update(found)
            self._shuffles += shuffles

    def onFailure(self, func_name: str, execution: Any, exception: Any) -> None:
        pass

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.sql.util.QueryExecutionListener"]

    # -- use ----------------------------------------------------------------------------------

    def __enter__(self) -> ScanCounter:
        ensure_callback_server_started(self.spark.sparkContext._gateway)
        listeners = self.spark._jsparkSession.listenerManager()
        listeners.register(self)
        # py4j wraps this object in a new Java proxy each time it is passed: unregistering
        # `self` would miss, so keep the proxy just registered (the list's last) to remove
        self._proxy = listeners.listListeners()[-1]
        return self

    def __exit__(self, *_: object) -> None:
        self.drain()
        self.spark._jsparkSession.listenerManager().unregister(self._proxy)

    def drain(self) -> None:
        self.spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()

    def take(self) -> Counter:
        """The files counted since the last take, after every finished query was delivered."""
        self.drain()
        with self._lock:
            taken, self._files = self._files, Counter()
        return taken

    def take_shuffles(self) -> int:
        """The shuffle exchanges counted since the last take_shuffles."""
        self.drain()
        with self._lock:
            taken, self._shuffles = self._shuffles, 0
        return taken
