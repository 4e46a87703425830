"""Make PyHive 0.7 read the empty results of Spark 3.5's Thrift server.

A statement without output (`create schema`, `create table`, `refresh table`, ...) returns a
result set whose one placeholder column ("Result") comes back with `columns=None` from Spark
3.5; PyHive then fails in `_fetch_more` with `'NoneType' object is not iterable`, and so does
every dbt-spark `run_query` of such a statement (e.g. this project's on-run-start hook).
Known upstream: apache/kyuubi#7106 (fixed in Kyuubi's PyHive fork), SPARK-48808.
The patch turns that `None` into an empty column list: an empty result, as Spark 3.3 sent.
"""

from __future__ import annotations

from typing import Any


def patch_pyhive() -> None:
    """Idempotent: wrap TCLIService's FetchResults once per process."""
    from TCLIService import TCLIService

    client = TCLIService.Client
    if getattr(client.FetchResults, "_lakehouse_patched", False):
        return
    original = client.FetchResults

    def fetch_results(self: Any, req: Any) -> Any:
        response = original(self, req)
        if response.results is not None and response.results.columns is None:
            response.results.columns = []
        return response

    fetch_results._lakehouse_patched = True  # type: ignore[attr-defined]
    client.FetchResults = fetch_results
