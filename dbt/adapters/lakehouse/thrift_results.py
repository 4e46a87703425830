"""Read a PyHive cursor's rows from Spark 3.5's Thrift server, empty results included.

A statement without output (`create schema`, `create table`, `refresh table`, ...) returns a
result set whose one placeholder column ("Result") comes back with `columns=None` from Spark
3.5; PyHive 0.7 then fails in `_fetch_more` with `'NoneType' object is not iterable`.
Known upstream: apache/kyuubi#7106 (fixed in Kyuubi's PyHive fork), SPARK-48808. That
result is empty, as Spark 3.3 sent it. Used by the adapter's thrift cursor and by
`scripts/cluster.py`; nothing in PyHive is changed.
"""

from __future__ import annotations

from typing import Any

EMPTY_RESULT_ERROR = "'NoneType' object is not iterable"


def fetchall(cursor: Any) -> list[Any]:
    """`cursor.fetchall()`, or [] for Spark 3.5's column-less empty result."""
    try:
        return list(cursor.fetchall())
    except TypeError as error:
        if str(error) != EMPTY_RESULT_ERROR:
            raise
        return []
