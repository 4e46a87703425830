"""The adapter: dbt-spark's, with its connection manager and a few methods for Jinja."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.column import SparkColumn
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.exceptions import CompilationError
from dbt_common.invocation import get_invocation_id

from dbt.adapters.lakehouse import erasure, maintenance, retention, statements, write_audit_publish
from dbt.adapters.lakehouse.connections import (
    LakehouseConnectionManager,
    start_session_beside_parse,
)
from dbt.adapters.lakehouse.invocation_state import (
    CachedRows,
    HeldLock,
    InvocationState,
    InvocationStates,
)

logger = AdapterLogger("lakehouse")


class LakehouseAdapter(SparkAdapter):
    ConnectionManager = LakehouseConnectionManager

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        start_session_beside_parse(self.config.credentials)
        self._recomputed_days: dict[str, list[str] | None] = {}
        self._invocations = InvocationStates()
        self._columns = threading.local()  # per thread: {(node, relation): columns}

    def execute(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        self._forget(self._columns, "known", statements.changed_relation(sql))
        self._forget(self._columns, "properties", statements.redefined_relation(sql))
        return super().execute(sql, *args, **kwargs)

    @staticmethod
    def _forget(kept: threading.local, name: str, changed: str | None) -> None:
        """Drop the answers in `kept.<name>` about the relation `changed` (every one for
        EVERY_RELATION, none for None)."""
        if changed == statements.EVERY_RELATION:
            setattr(kept, name, {})
        elif changed is not None:
            known = kept.__dict__.get(name, {})
            for key in [k for k in known if statements.identifier(k[2]) == changed]:
                del known[key]

    def get_columns_in_relation(self, relation: Any) -> list[Any]:
        """dbt-spark's `describe extended`, asked once per node until the node changes a table.
        An incremental model asked it three times for its own table (the schema-change check,
        the insert's column list, ...): about 30 statements of a scheduled build. The answer is
        kept for the node that asked (the invocation, the thread and its connection's name:
        an in-process runner may keep the adapter across commands) and forgotten at that
        thread's next statement that may change the relation (`alter table ... add columns`,
        `create or replace`, an insert: statements.changed_relation; a statement it cannot
        read forgets every answer), so a node never sees columns older than its own last
        write. A statement on another relation (a landing table's new partitions, the
        model's temporary view) keeps the answer."""
        known = self._columns.__dict__.setdefault("known", {})
        key = (get_invocation_id(), self._node_name(), str(relation))
        if key not in known:
            known[key] = super().get_columns_in_relation(relation)
        return list(known[key])

    def parse_describe_extended(self, relation: Any, raw_rows: Any) -> list[Any]:
        """dbt-spark's parse, and the table's properties from the same answer kept for the
        node (described_properties): Iceberg lists its sort order (`sort-order`) among them."""
        columns = super().parse_describe_extended(relation, raw_rows)
        listed = next(
            (row[1] for row in raw_rows if str(row[0]).strip() == "Table Properties"), None
        )
        kept = self._columns.__dict__.setdefault("properties", {})
        key = (get_invocation_id(), self._node_name(), str(relation))
        kept[key] = statements.table_properties(listed) if listed else {}
        return columns

    @available
    def described_properties(self, relation: Any) -> dict[str, str] | None:
        """The table properties of `relation` in this node's last `describe extended` of it,
        while no statement of the node may have changed its definition; None otherwise (not
        described, or redefined since: ask the table)."""
        kept = self._columns.__dict__.get("properties", {})
        found = kept.get((get_invocation_id(), self._node_name(), str(relation)))
        return dict(found) if found is not None else None

    def _node_name(self) -> str:
        connection = self.connections.get_if_exists()
        return connection.name if connection is not None and connection.name else ""

    @available
    def try_execute(self, sql: str) -> dict[str, Any]:
        """Run `sql` and report its error instead of raising: {"table", "error"}.

        Maintenance runs in a post-hook, after the model's own write has committed. Jinja has
        no try/except and no dbt-spark method returns a failed statement's error, so without
        this a failed `CALL` would fail the model and skip its children although its data is
        in. The maintenance macros warn and record the error (`on_maintenance_error: warn`).
        """
        try:
            _, table = self.execute(sql, auto_begin=False, fetch=True)
        except Exception as error:  # what the engine said, as one line for logs and rows
            message = " ".join(str(error).split())
            return {"table": None, "error": message[:2000] or type(error).__name__}
        return {"table": table, "error": None}

    @available
    def is_default_selector(self, name: str) -> bool:
        """Whether `name` is the project's default selector (`default: true` in its
        selectors.yml): `dbt build --selector <it>` selects what a plain `dbt build` does."""
        default = getattr(self.config, "get_default_selector_name", None)
        return bool(name) and default is not None and default() == name

    @available
    def maintenance_policy(self, policy: dict[str, Any] | None, table: str) -> maintenance.Policy:
        """A model's maintenance policy, checked (maintenance.read_policy): a policy that
        cannot be applied fails the model at compile time, naming the table and setting."""
        try:
            return maintenance.read_policy(policy, table)
        except maintenance.PolicyError as error:
            raise CompilationError(str(error)) from error

    @available
    def maintenance_summary(self, state: dict[str, Any], expire_before_ms: int) -> dict[str, Any]:
        """The cheap read of a table summed up (maintenance.commit_summary)."""
        return maintenance.commit_summary(state, expire_before_ms)

    @available
    def maintenance_needs_full_read(
        self, policy: maintenance.Policy, summary: dict[str, Any], nightly: bool
    ) -> bool:
        """Whether to read the table's manifests too (maintenance.needs_full_read)."""
        return maintenance.needs_full_read(policy, summary, nightly)

    @available
    def maintenance_steps(
        self,
        policy: maintenance.Policy,
        summary: dict[str, Any],
        health: dict[str, Any] | None,
        nightly: bool,
    ) -> list[dict[str, Any]]:
        """Each configured step, due or not, with why (maintenance.decide_steps)."""
        return maintenance.decide_steps(policy, summary, health, nightly)

    @available
    def erasure_rule(self, config: Any, table: str) -> erasure.ErasureRule | None:
        """A model's erasure rule, checked (erasure.read_rule): a rule that cannot be applied
        stops the erasure before anything is read, naming the table and setting."""
        try:
            return erasure.read_rule(config, table)
        except erasure.ErasureError as error:
            raise CompilationError(str(error)) from error

    @available
    def erasure_request(self, request: Any, subjects: Any) -> tuple[str, tuple[str, ...]]:
        """The request's name and its subject ids, checked (erasure.read_request)."""
        try:
            return erasure.read_request(request, subjects)
        except erasure.ErasureError as error:
            raise CompilationError(str(error)) from error

    @available
    def erasure_plan(
        self,
        rule: erasure.ErasureRule,
        table: str,
        subjects: tuple[str, ...],
        types: dict[str, str],
        load_ledger: bool,
        request: str,
    ) -> list[dict[str, Any]]:
        """One table's erasure statements' parts (erasure.plan)."""
        try:
            return erasure.plan(rule, table, subjects, types, load_ledger, request)
        except erasure.ErasureError as error:
            raise CompilationError(str(error)) from error

    @available
    def erasure_recompute_range(self, days: list[Any]) -> dict[str, Any] | None:
        """The backfill range that recomputes `days` (erasure.recompute_range)."""
        return erasure.recompute_range(days)

    @available
    def retention_rule(self, config: Any, table: str) -> retention.RetentionRule | None:
        """A model's retention rule, checked (retention.read_rule): a rule that cannot be
        applied fails before anything is read or deleted, naming the table and setting."""
        try:
            return retention.read_rule(config, table)
        except retention.RetentionError as error:
            raise CompilationError(str(error)) from error

    @available
    def retention_refusal(
        self, table: str, rule: retention.RetentionRule, lookbacks: dict[str, int]
    ) -> str:
        """Why the rule must not run on the table ('' when it may): retention.refusal."""
        return retention.refusal(table, rule, lookbacks) or ""

    @available
    def retention_backfill_refusal(
        self, table: str, rule: retention.RetentionRule, newest: Any, start: str, own: bool
    ) -> str:
        """Why a backfill from `start` must not run ('' when it may): retention.backfill_refusal."""
        return retention.backfill_refusal(table, rule, newest, start, own) or ""

    @available
    def retention_summary_keys(self) -> list[str]:
        """The commit summary counters a retention delete is reported from."""
        return list(retention.SUMMARY_KEYS)

    @available
    def retention_delete_outcome(self, summary: dict[str, int], step: dict[str, Any]) -> str:
        """The log text of a retention delete (retention.delete_outcome)."""
        return retention.delete_outcome(summary, step)

    @available
    def retention_step(
        self, rule: retention.RetentionRule, oldest: Any, newest: Any
    ) -> dict[str, Any]:
        """The retention step of a nightly run, due or not, with why (retention.decide)."""
        return retention.decide(rule, oldest, newest)

    @available
    def embedded_session_setting(self, key: str) -> str | None:
        """A setting of the embedded session dbt runs on ('' when unset), read in this process
        without a statement; None on a Thrift connection, whose session is the server's (ask
        it with `set <key>`). The write-audit-publish branch is read this way before every
        write, test and stamp: about a hundred statements a scheduled build."""
        if self.config.credentials.method != SparkConnectionMethod.SESSION:
            return None
        from pyspark.sql import SparkSession

        session = SparkSession._instantiatedSession  # the one dbt-spark's cursor runs on
        if session is None:
            return None
        return session.conf.get(key, None) or ""

    @available
    def cache_rows(self, name: str, sql: str) -> str:
        """Cache the rows of `sql` for the readers later in this run, at once; returns the
        relation they read. A view made by SQL keeps its text, and Spark parses and analyzes
        that text again at every reference: a typed model's (a JSON parse and a cast per
        field) took about a second each time, a dozen times a scheduled build. The embedded
        session, which every connection shares, gets a temporary view that keeps its analyzed
        plan (made from a DataFrame); a Thrift connection, a session of its own, a global
        temporary view that every connection of the server sees."""
        if self.config.credentials.method == SparkConnectionMethod.SESSION:
            from pyspark.sql import SparkSession

            session = SparkSession._instantiatedSession  # the one dbt-spark's cursor runs on
            logger.debug(f"cache_rows {name}: {sql}")
            session.sql(sql).createOrReplaceTempView(name)
            self.execute(f"cache table {name}")
            return name
        self.execute(f"create or replace global temporary view {name} as {sql}")
        self.execute(f"cache table global_temp.{name}")
        return f"global_temp.{name}"

    @available
    def note_recomputed_days(self, relation: Any, days: list[str] | None) -> str:
        """Remember the days a model's SQL recomputes, resolved while dbt renders it, for its
        materialization, which runs next in the same thread with a fresh Jinja context: a
        day of them left without any row must be emptied, not keep its old rows."""
        self._recomputed_days[str(relation)] = list(days) if days is not None else None
        return ""

    @available
    def recomputed_days(self, relation: Any) -> list[str] | None:
        """The days noted for `relation` by this run's rendering of it (once), or None."""
        return self._recomputed_days.pop(str(relation), None)

    @available
    def emit_lineage(self, results: list[Any], nodes: dict[str, Any], catalog: str) -> str:
        """OpenLineage events for this invocation's models and snapshots (lineage.py): their
        tables' locations from dbt's relation cache, else one `show table extended` per
        schema (and `describe table extended` of a table the listing shows no location for:
        every table of a REST catalog). Returns '' or why nothing was sent: lineage never
        fails a run."""
        from dbt.adapters.lakehouse import lineage

        try:
            emitted = [n for n in nodes.values() if n.get("resource_type") in lineage.EMITTED]
            # list only the schemas of what ran and what it read: `dbt run -s model` lists
            # two schemas, not every schema of the project
            ran = [
                r.node.unique_id
                for r in results
                if r.node.resource_type in lineage.EMITTED and r.node.unique_id in nodes
            ]
            involved = set(ran).union(*(lineage.tables_read(u, nodes) for u in ran))
            tables = {
                (nodes[u]["schema"].lower(), lineage.table_name(nodes[u]).lower())
                for u in involved
                if nodes[u].get("schema")
            }
            # dbt's relation cache holds the listings it made at the run's start: list again
            # only a schema with a table it lacks (created by this run, or a REST catalog's)
            locations = self._cached_locations({schema for schema, _ in tables})
            unlisted = {schema for schema, table in tables if (schema, table) not in locations}
            locations.update(self._table_locations(sorted(unlisted)))

            def locate(schema: str, table: str) -> str | None:
                key = (schema.lower(), table.lower())
                if locations.get(key, "") == "":  # listed without a location, or not listed
                    locations[key] = self._described_location(schema, table)
                return locations[key]

            found = lineage.events(results, nodes, locate, catalog)
            if not found or not emitted:
                return ""
            # beside the target's data, else in dbt's target folder
            data_dir = getattr(self.config.credentials, "data_dir", None)
            folder = Path(self.config.project_root) / (data_dir or self.config.target_path)
            default = folder / "lineage" / "events.jsonl"
            sender = lineage.client(default)
            for event in found:
                sender.emit(event)
            sender.close()
        except Exception as error:  # lineage is a report, not part of the run
            return " ".join(str(error).split())[:500] or type(error).__name__
        return ""

    def _cached_locations(self, schemas: set[str]) -> dict[tuple[str, str], str]:
        """{(schema, table): location} of the tables in `schemas` that dbt's relation cache
        holds with their listing's `Location` line."""
        found: dict[tuple[str, str], str] = {}
        for schema in schemas:
            for relation in self.cache.get_relations(None, schema):
                listing = getattr(relation, "information", None) or ""
                location = re.search(r"^Location: (.+)$", listing, re.MULTILINE)
                if location and relation.identifier:
                    found[(schema, relation.identifier.lower())] = location[1].strip()
        return found

    def _table_locations(self, schemas: list[str]) -> dict[tuple[str, str], str]:
        """{(schema, table): location} of every table in `schemas`, one listing each; ''
        for a table listed without one (a REST catalog's listing has no Location line)."""
        found: dict[tuple[str, str], str] = {}
        for schema in schemas:
            try:
                _, rows = self.execute(f"show table extended in {schema} like '*'", fetch=True)
            except Exception:  # a schema not created yet
                continue
            for row in rows:
                location = re.search(r"^Location: (.+)$", str(row[3]), re.MULTILINE)
                found[(schema.lower(), str(row[1]).lower())] = (
                    location[1].strip() if location else ""
                )
        return found

    def _described_location(self, schema: str, table: str) -> str | None:
        """The `Location` row of `describe table extended`, or None (no such table)."""
        try:
            _, rows = self.execute(f"describe table extended {schema}.{table}", fetch=True)
        except Exception:  # not there (yet): left out of the event
            return None
        for row in rows:
            if str(row[0]).strip() == "Location" and row[1]:
                return str(row[1]).strip()
        return None

    def _state(self) -> InvocationState:
        return self._invocations.of(get_invocation_id())

    @available
    def note_run_lock(self, load_id: int | None, expires_at: str | None) -> str:
        """acquire_run_lock: this invocation holds the run lock, with `load_id`, until
        `expires_at` (UTC, as lakehouse.RunLock writes it); release_run_lock: (none, none)."""
        state = self._state()
        if load_id is None or not expires_at:
            state.run_lock = None
        else:
            state.run_lock = HeldLock(int(load_id), datetime.fromisoformat(str(expires_at)))
        return ""

    @available
    def held_load_id(self) -> int | None:
        """The load id of the run lock this invocation holds, while its lease lasts (no
        statement: current_load_id); None otherwise, and current_load_id reads the lock."""
        lock = self._state().run_lock
        now = datetime.now(UTC).replace(tzinfo=None)
        return lock.load_id if lock is not None and lock.lasts(now) else None

    @available
    def note_wap_branch(self, branch: str | None) -> str:
        """The branch this run writes on (wap_begin at on-run-start), or None when
        write-audit-publish is off: every writing node's pre_model_hook reads it."""
        self._state().wap_branch = str(branch) if branch else None
        return ""

    @available
    def wap_branch(self) -> str | None:
        """The branch this invocation writes on, as wap_begin noted it, or None."""
        return self._state().wap_branch

    @available
    def wap_writes_table(self, node: Any) -> bool:
        """Whether `node` writes an Iceberg table kept on the run's branch
        (write_audit_publish.writes_table)."""
        return write_audit_publish.writes_table(node)

    @available
    def prepare_branch_tables(self, nodes: list[Any], branch: str) -> str:
        """wap_begin: ready every existing table that `nodes` (the run's selected nodes, as in
        dbt's `graph`) write on the run's `branch`, in one statement
        (write_audit_publish.prepare_branch_sql), before the first of them runs. Tables made
        inside the run are created on the branch and need nothing."""
        tables = []
        for node in nodes:
            if not write_audit_publish.writes_table(node):
                continue
            name = node.get("alias") or node.get("name")
            relation = self.get_relation(node.get("database"), node.get("schema"), name)
            if relation is not None and not relation.is_view and str(relation) not in tables:
                tables.append(str(relation))
        if tables:
            self._ready_for_branch(tables, branch)
        return ""

    def _ready_for_branch(self, tables: list[str], branch: str) -> None:
        sql = write_audit_publish.prepare_branch_sql(tables, branch)
        _, prepared = self.execute(sql, fetch=True)
        for table, outcome in zip(tables, prepared.rows[0], strict=True):
            if "wap-enabled" in str(outcome):
                logger.info(f"{table}: write.wap.enabled set (write-audit-publish)")
        self._state().branch_ready.update(tables)

    def pre_model_hook(self, config: Any) -> None:
        """Before a model, seed or snapshot writes its Iceberg table in a write-audit-publish
        run, with no hook of the project's: a Thrift connection (a Spark session of its own)
        is pointed at the run's branch, and an existing table that wap_begin did not ready
        (prepare_branch_tables) is readied now (the embedded session's setting was set once by
        wap_begin). dbt calls this on the node's connection, tests included."""
        node, branch = getattr(config, "model", None), self._state().wap_branch
        if node is None or branch is None or not write_audit_publish.writes_table(node):
            return None
        if self.config.credentials.method != SparkConnectionMethod.SESSION:
            self.execute(f"set spark.wap.branch = {branch}")
        relation = self.get_relation(node.database, node.schema, node.alias or node.name)
        if relation is None or relation.is_view or str(relation) in self._state().branch_ready:
            return None
        self._ready_for_branch([str(relation)], branch)
        return None

    @available
    def last_tested_load(self) -> int | None:
        """The highest load id of a published run that tested every row it wrote, as this
        invocation read it from ops.wap_runs (note_last_tested_load); None until read. Every
        test of a scheduled run asks: the table is read once."""
        return self._state().last_tested_load

    @available
    def note_last_tested_load(self, load_id: int) -> int:
        """Keep the load id read from ops.wap_runs for this invocation; returns it."""
        self._state().last_tested_load = int(load_id)
        return int(load_id)

    @available
    def run_records_ready(self) -> bool:
        """Whether this invocation found ops.wap_runs with its `tested` column, or made it."""
        return self._state().run_records_ready

    @available
    def note_run_records_ready(self) -> str:
        """ops.wap_runs exists with its `tested` column: no later node checks again."""
        self._state().run_records_ready = True
        return ""

    @available
    def note_cached_rows(
        self, upstream: str, relation: str, load_id: int, earliest_load: int | None = None
    ) -> str:
        """Record that this run cached `upstream`'s rows of its load (`_load_id` >=
        `load_id`) as `relation`, for the upstream's readers later in the run;
        `earliest_load`: the lowest load id in ODS then (None: no row)."""
        every_load = earliest_load is None or int(earliest_load) >= int(load_id)
        self._state().cached_rows[str(upstream)] = CachedRows(
            str(relation), int(load_id), every_load
        )
        return ""

    @available
    def cached_rows(self, upstream: str) -> CachedRows | None:
        """This run's cache of `upstream`'s rows of its load, or None."""
        return self._state().cached_rows.get(str(upstream))

    @available
    def cached_rows_of_run(self) -> list[CachedRows]:
        """Every cache this run made (dropped at its end)."""
        return list(self._state().cached_rows.values())

    @available
    def note_for_post_hooks(self, relation: Any, values: dict[str, Any]) -> dict[str, Any]:
        """Keep what a node's rendering resolved for `relation` (its own table) for the node's
        post-hooks, which render later in a fresh Jinja context; returns `values`."""
        self._state().node_values[str(relation)] = dict(values)
        return values

    @available
    def noted_for_post_hooks(self, relation: Any) -> dict[str, Any] | None:
        """What this invocation's rendering of `relation`'s node noted, or None."""
        return self._state().node_values.get(str(relation))

    def _get_columns_for_catalog(self, relation: Any) -> Iterable[dict[str, Any]]:
        """dbt-spark falls back to DESCRIBE when a table's listing has no column lines (every
        Iceberg table over a REST catalog: the `s3` target) and drops the listing's
        `Statistics:` on that path, so `docs generate` showed no size or row count: put
        them back."""
        information = getattr(relation, "information", None) or ""
        found = re.findall(self.INFORMATION_STATISTICS_REGEX, information)
        stats = SparkColumn.convert_table_stats(found[0]) if found else {}
        for column in super()._get_columns_for_catalog(relation):
            if stats and not any(key.startswith("stats:") for key in column):
                column.update(stats)
            yield column
