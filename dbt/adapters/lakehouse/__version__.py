"""The lakehouse adapter follows the dbt-spark release it extends."""

from dbt.adapters.spark.__version__ import version

__all__ = ["version"]
