"""OpenLineage events for one dbt invocation, sent by the on-run-end hook `emit_lineage`
(macros/lineage/emit_lineage.sql, through LakehouseAdapter.emit_lineage): per model and
snapshot that ran, START then COMPLETE or FAIL, with the tables it read (through ephemeral
models, which are no tables) and the table it wrote. Each dataset is named by its table's
location, as openlineage-spark names Iceberg tables (`file` + path; `s3://<bucket>` + key for
s3a://), with a `symlinks` identifier to its catalog name, so lineage from Spark jobs and from
dbt joins on the same datasets. Transport: the client's own configuration when
OPENLINEAGE_CONFIG or OPENLINEAGE_URL is set (HTTP, Kafka, ...), else a JSON-lines file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import job_type_job, symlinks_dataset
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.uuid import generate_new_uuid

PRODUCER = "https://github.com/lakehouse/dbt-spark-iceberg"
JOB_NAMESPACE = os.environ.get("OPENLINEAGE_NAMESPACE", "lakehouse")
EMITTED = ("model", "snapshot")


def dataset_name(location: str) -> tuple[str, str]:
    """(namespace, name) of a table location, per OpenLineage's naming (s3a -> s3)."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return "file", parsed.path.rstrip("/")
    scheme = "s3" if parsed.scheme in ("s3", "s3a", "s3n") else parsed.scheme
    return f"{scheme}://{parsed.netloc}", parsed.path.strip("/")


def table_name(node: Mapping[str, Any]) -> str:
    """The table a model, snapshot, seed or source node names in its schema."""
    return node.get("alias") or node.get("identifier") or node["name"]


def tables_read(unique_id: str, nodes: Mapping[str, Any]) -> list[str]:
    """The tables (models, snapshots, seeds, sources) a node reads, through ephemeral models."""
    found: list[str] = []
    for parent in nodes[unique_id]["depends_on"]["nodes"]:
        node = nodes.get(parent)
        if node is None:
            continue
        if node.get("config", {}).get("materialized") == "ephemeral":
            found += [t for t in tables_read(parent, nodes) if t not in found]
        elif parent not in found:
            found.append(parent)
    return found


def events(
    results: Iterable[Any],
    nodes: Mapping[str, Any],
    locate: Callable[[str, str], str | None],
    catalog: str,
    facets: Mapping[str, Any] | None = None,
) -> list[RunEvent]:
    """START and COMPLETE/FAIL per model and snapshot result. `nodes`: graph nodes and
    sources by unique id; `locate(schema, table)`: the table's location or None (a table
    not there: left out of the event); `catalog`: the symlinks' namespace."""

    def dataset(unique_id: str, kind: type) -> Any:
        node = nodes[unique_id]
        table = table_name(node)
        location = locate(node["schema"], table)
        if location is None:
            return None
        namespace, name = dataset_name(location)
        link = symlinks_dataset.Identifier(
            namespace=catalog, name=f"{node['schema']}.{table}", type="TABLE"
        )
        symlinks = symlinks_dataset.SymlinksDatasetFacet(identifiers=[link])
        return kind(namespace=namespace, name=name, facets={"symlinks": symlinks})

    job_type = job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration="DBT", jobType="MODEL"
    )
    sent: list[RunEvent] = []
    for result in results:
        unique_id = result.node.unique_id
        if result.node.resource_type not in EMITTED or unique_id not in nodes:
            continue
        inputs = [d for d in (dataset(p, InputDataset) for p in tables_read(unique_id, nodes)) if d]
        output = dataset(unique_id, OutputDataset)
        timing = {t.name: t for t in result.timing}.get("execute")
        started = timing.started_at.isoformat() if timing and timing.started_at else None
        ended = timing.completed_at.isoformat() if timing and timing.completed_at else started
        run = Run(runId=str(generate_new_uuid()), facets=dict(facets or {}))
        job = Job(namespace=JOB_NAMESPACE, name=unique_id, facets={"jobType": job_type})
        status = str(getattr(result.status, "value", result.status))
        end = RunState.COMPLETE if status in ("success", "pass") else RunState.FAIL
        for state, when in ((RunState.START, started), (end, ended)):
            if when is None:
                continue
            sent.append(RunEvent(eventType=state, eventTime=when, run=run, job=job,
                                 producer=PRODUCER, inputs=inputs,
                                 outputs=[output] if output else []))  # fmt: skip
    return sent


def client(default_file: Path) -> OpenLineageClient:
    """The client's own configuration when there is one (OPENLINEAGE_CONFIG, OPENLINEAGE_URL,
    ./openlineage.yml, ~/.openlineage/openlineage.yml), else append to `default_file` (one
    JSON event per line)."""
    configured = (
        os.environ.get("OPENLINEAGE_CONFIG")
        or os.environ.get("OPENLINEAGE_URL")
        or Path("openlineage.yml").is_file()
        or (Path.home() / ".openlineage" / "openlineage.yml").is_file()
    )
    if configured:
        return OpenLineageClient()
    default_file.parent.mkdir(parents=True, exist_ok=True)
    config = FileConfig(log_file_path=str(default_file), append=True)
    return OpenLineageClient(transport=FileTransport(config))
