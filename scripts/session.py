"""The SparkSession of one of the project's embedded targets, by its name (`local`, `ci`, `s3`)."""

from __future__ import annotations

from pyspark.sql import SparkSession

from dbt.adapters.lakehouse.embedded_session import start_session
from scripts.spark_config import embedded_target


def get_spark(target: str = "local") -> SparkSession:
    """The SparkSession dbt-spark's `session` method will reuse (it calls getOrCreate)."""
    return start_session(embedded_target(target))
