"""Give dbt's Jinja a statement that reports its error instead of raising:
`adapter.try_execute(sql)` -> {"table": agate.Table | None, "error": str | None}.

Maintenance runs in a post-hook, after the model's own write has committed. Jinja has no
try/except and no dbt-spark adapter method returns a failed statement's error, so without
this a failed `CALL` fails the model and skips its children although its data is in. The
maintenance macros use `try_execute` when it is there (`on_maintenance_error: warn` then
warns and records the error) and fall back to `run_query` (the error fails the model) when
it is not. The project's dbt plugin (scripts/dbt_plugin.py, so plain `dbt` too), `lakehouse
dbt`, pytest and `bench` install it.
"""

from __future__ import annotations

from typing import Any

METHOD = "try_execute"


def install() -> None:
    """Idempotent: add `try_execute` to dbt-spark's adapter and expose it to Jinja."""
    from dbt.adapters.spark.impl import SparkAdapter

    if METHOD in SparkAdapter._available_:
        return

    def try_execute(self: Any, sql: str) -> dict[str, Any]:
        try:
            _, table = self.execute(sql, auto_begin=False, fetch=True)
        except Exception as error:  # what the engine said, as one line for logs and rows
            message = " ".join(str(error).split())
            return {"table": None, "error": message[:2000] or type(error).__name__}
        return {"table": table, "error": None}

    SparkAdapter.try_execute = try_execute  # type: ignore[attr-defined]
    SparkAdapter._available_ = SparkAdapter._available_ | {METHOD}
