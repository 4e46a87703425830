"""The `lakehouse` dbt adapter: dbt-spark, extended the supported way (an adapter plugin that
subclasses it, as dbt-databricks does), for profiles of `type: lakehouse`.

What it adds to dbt-spark, and why:
- the embedded targets' SparkSession, started from the profile's fields when dbt opens its
  first connection (connections.py, embedded.py, embedded_session.py), so plain `dbt` needs
  no Spark settings in profiles;
- `adapter.try_execute(sql)` for Jinja (impl.py): a failed maintenance statement is reported,
  not raised, after a model's data has committed;
- reading Spark 3.5's empty Thrift results with PyHive 0.7 (thrift_results.py);
- the jars of an embedded session: Iceberg's runtime and the adapter's Java helpers, compiled
  once per installation (jars.py), run by the Java runtime it finds (java_runtime.py);
- the maintenance decisions as plain functions (maintenance.py);
- every macro override of dbt-spark, in dbt/include/lakehouse/macros/ (`lakehouse__*`, and the
  incremental materialization with adapter='lakehouse').
Macros dispatch to `lakehouse__*`, then dbt-spark's `spark__*`, then `default__*`.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    """`Plugin`, built when dbt loads the adapter. Building it imports dbt-core and dbt-spark
    (1.4 s); deferred to here, the project's own tools import the adapter's plain modules
    (jars, java_runtime, thrift_results, maintenance) without them."""
    if name != "Plugin":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from dbt.adapters.base import AdapterPlugin

    from dbt.adapters.lakehouse.connections import LakehouseCredentials
    from dbt.adapters.lakehouse.impl import LakehouseAdapter
    from dbt.include import lakehouse

    plugin = AdapterPlugin(
        adapter=LakehouseAdapter,  # type: ignore[arg-type]
        credentials=LakehouseCredentials,
        include_path=lakehouse.PACKAGE_PATH,
        dependencies=["spark"],
    )
    globals()["Plugin"] = plugin
    return plugin
