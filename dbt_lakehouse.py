"""dbt plugin entry point: dbt-core imports every top-level `dbt_*` module and starts the
classes listed in `plugins` when it loads a project. See scripts/dbt_plugin.py."""

from scripts.dbt_plugin import lakehouse_plugin_class

plugins = [lakehouse_plugin_class()]
