"""The object store and REST catalog of a test run (the `s3` target's services), shared by
test_object_store.py and test_cluster.py: one set per run (the `store` fixture in
conftest.py), started by `lakehouse-services` on free loopback ports with keys of the run."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scripts import services
from scripts.spark_config import environment_without_project_settings


@contextmanager
def running_store(data: Path) -> Iterator[tuple]:
    """Running services, and the environment a process of the `s3` target needs (only that:
    pytest's own LAKEHOUSE_* settings, its landing folder above all, must not leak into it)."""
    keys = {"AWS_ACCESS_KEY_ID": "lakehouse-test", "AWS_SECRET_ACCESS_KEY": secrets.token_hex(16)}
    # each pytest worker (PYTEST_XDIST_WORKER gw0, gw1) searches ports of its own: two
    # starting at once must not both find the same ones free
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
    settings = services.on_free_ports(data / "services", first=21000 + 2000 * worker)
    env = {"LAKEHOUSE_DATA_DIR": str(data), **keys, **settings.process_env()}
    saved = {name: os.environ.get(name) for name in keys}
    os.environ.update(keys)  # this process signs its S3 calls with them too
    try:
        services.start(settings, log=print)
        yield settings, env, data
    finally:
        services.stop(settings, log=print)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def process_env(env: dict[str, str]) -> dict[str, str]:
    """A process of the `s3` target: the store's environment, dbt's target/ and logs in the
    data folder (not the checkout's, which pytest's own dbt runs use)."""
    own = environment_without_project_settings()
    data = Path(env["LAKEHOUSE_DATA_DIR"])
    return {
        **own,
        **env,
        "LAKEHOUSE_DRIVER_MEMORY": "1g",
        "DBT_TARGET_PATH": str(data / "target"),
        "DBT_LOG_PATH": str(data / "logs"),
    }


def rest_catalog(store):
    """pyiceberg on the REST catalog, with the keys of this test run."""
    from pyiceberg.catalog import load_catalog

    settings, env, _ = store
    return load_catalog(
        "rest",
        type="rest",
        uri=settings.catalog_uri,
        warehouse=settings.warehouse,
        credential=f"{env['AWS_ACCESS_KEY_ID']}:{env['AWS_SECRET_ACCESS_KEY']}",
        **{
            "oauth2-server-uri": f"{settings.catalog_uri}/v1/oauth/tokens",
            "s3.endpoint": settings.s3_endpoint,
            "s3.access-key-id": env["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": env["AWS_SECRET_ACCESS_KEY"],
            "s3.region": "us-east-1",
        },
    )
