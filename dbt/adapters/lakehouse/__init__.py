"""The `lakehouse` dbt adapter: dbt-spark, extended the supported way (an adapter plugin that
subclasses it, as dbt-databricks does), for this project's profiles (`type: lakehouse`).

What it adds to dbt-spark, and why:
- the embedded targets' SparkSession, started from scripts/spark_config.py when dbt opens
  its first connection (connections.py), so plain `dbt` needs no Spark settings in profiles;
- `adapter.try_execute(sql)` for Jinja (impl.py): a failed maintenance statement is reported,
  not raised, after a model's data has committed;
- reading Spark 3.5's empty Thrift results with PyHive 0.7 (connections.py);
- every macro override of dbt-spark, in dbt/include/lakehouse/macros/ (`lakehouse__*`, and the
  incremental materialization with adapter='lakehouse').
Macros dispatch to `lakehouse__*`, then dbt-spark's `spark__*`, then `default__*`.
"""

from dbt.adapters.base import AdapterPlugin

from dbt.adapters.lakehouse.connections import (
    LakehouseConnectionManager,  # noqa: F401
    LakehouseCredentials,
)
from dbt.adapters.lakehouse.impl import LakehouseAdapter
from dbt.include import lakehouse

Plugin = AdapterPlugin(
    adapter=LakehouseAdapter,  # type: ignore[arg-type]
    credentials=LakehouseCredentials,
    include_path=lakehouse.PACKAGE_PATH,
    dependencies=["spark"],
)
