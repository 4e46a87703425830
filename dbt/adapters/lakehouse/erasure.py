"""What an erasure request does to each table, as plain functions of the table's `erasure`
config, its column types and the subjects: no Spark and no dbt, so every rule is unit-tested
(tests/python/test_erasure_plan.py). The operation `erase_subjects` renders the statements
and acts; docs/retention.md#erasure.

A table says where it holds a subject (a user) in its config:

    erasure:
      columns: [user_id]                                  # the row is the subject's
      json: {column: _raw_line, fields: [user_id], keep: [_kafka_offset]}  # ... by a JSON field
      detach: [author_user_id]                            # the row only mentions the subject
      detach_json: {column: _raw_line, fields: [author_user_id]}
      recompute: true                                     # an aggregate of erased rows

A row that is the subject's is deleted; in a load ledger (config `load_ledger`, such as ODS)
it is redacted instead: its JSON column becomes a marker naming the request, and the row,
with its file and source position, stays, so the file still counts as loaded and a re-sent
copy is still known as re-sent. A row that only mentions the subject keeps everything but
that mention (set to null). An aggregate with `recompute` has the days of the erased rows
it reads recomputed by a backfill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from dbt.adapters.lakehouse.retention import IDENTIFIER

SUBJECT = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}$")
REQUEST = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
SETTINGS = ("columns", "json", "detach", "detach_json", "recompute")
NUMERIC = re.compile(r"^(tinyint|smallint|int|integer|bigint|long|short|byte)$", re.IGNORECASE)


class ErasureError(ValueError):
    """An erasure that cannot be applied; the message names the table or argument and the fix."""


@dataclass(frozen=True)
class JsonFields:
    """Fields of a raw JSON text column; `keep`: fields a redacted text keeps (the record's
    source position, which says it was delivered; never a value of the subject's)."""

    column: str
    fields: tuple[str, ...]
    keep: tuple[str, ...] = ()


@dataclass(frozen=True)
class ErasureRule:
    """Where a table holds the subject (see the module's doc)."""

    columns: tuple[str, ...] = ()
    json: JsonFields | None = None
    detach: tuple[str, ...] = ()
    detach_json: JsonFields | None = None
    recompute: bool = False

    @property
    def holds_rows(self) -> bool:
        return bool(self.columns or self.json)

    @property
    def mentions(self) -> bool:
        return bool(self.detach or self.detach_json)


def _columns(value: Any, what: str, table: str) -> tuple[str, ...]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not names:
        raise ErasureError(f"erasure of {table}: {what} must list columns, got {value!r}")
    for name in names:
        if not isinstance(name, str) or not IDENTIFIER.match(name):
            raise ErasureError(f"erasure of {table}: {what} must name columns, got {name!r}")
    return tuple(names)


def _json_fields(value: Any, what: str, table: str) -> JsonFields:
    keys = {"column", "fields", "keep"} if what == "json" else {"column", "fields"}
    if not isinstance(value, dict) or not {"column", "fields"} <= set(value) <= keys:
        raise ErasureError(
            f"erasure of {table}: {what} must be {{column: <JSON text column>, fields: [...]"
            f"{', keep: [...]' if 'keep' in keys else ''}}}, got {value!r}"
        )
    (column,) = _columns(value["column"], f"{what}.column", table)
    keep = _columns(value["keep"], f"{what}.keep", table) if "keep" in value else ()
    return JsonFields(column, _columns(value["fields"], f"{what}.fields", table), keep)


def read_rule(config: Any, table: str) -> ErasureRule | None:
    """A model's `erasure` config, checked: none when the table holds no subject."""
    if config is None or config == {}:
        return None
    if not isinstance(config, dict):
        raise ErasureError(f"erasure of {table}: expected a mapping of {', '.join(SETTINGS)}")
    unknown = sorted(set(config) - set(SETTINGS))
    if unknown:
        raise ErasureError(
            f"erasure of {table}: unknown setting {', '.join(unknown)} (the settings are"
            f" {', '.join(SETTINGS)})"
        )
    recompute = config.get("recompute", False)
    if not isinstance(recompute, bool):
        raise ErasureError(f"erasure of {table}: recompute is true or false, got {recompute!r}")
    return ErasureRule(
        columns=_columns(config["columns"], "columns", table) if "columns" in config else (),
        json=_json_fields(config["json"], "json", table) if "json" in config else None,
        detach=_columns(config["detach"], "detach", table) if "detach" in config else (),
        detach_json=(
            _json_fields(config["detach_json"], "detach_json", table)
            if "detach_json" in config
            else None
        ),
        recompute=recompute,
    )


def read_request(request: Any, subjects: Any) -> tuple[str, tuple[str, ...]]:
    """The request's name and its subjects, checked. The name keys the erasure's record (a
    rerun with the same name resumes it); the subjects are ids, never stored."""
    if not isinstance(request, str) or not REQUEST.match(request):
        raise ErasureError(
            "erase_subjects: `request` names the request (letters, digits, _ . : -; at most"
            f" 64), for example DSR-2026-0042; got {request!r}"
        )
    if not isinstance(subjects, list | tuple) or not subjects:
        raise ErasureError(f"erase_subjects: `user_ids` must list the subjects, got {subjects!r}")
    checked = []
    for subject in subjects:
        text = str(subject)
        if isinstance(subject, bool) or not SUBJECT.match(text):
            raise ErasureError(f"erase_subjects: {subject!r} is not a subject id")
        checked.append(text)
    return request, tuple(sorted(set(checked)))


def _literal(subject: str, numeric: bool) -> str:
    if numeric:
        if not subject.lstrip("-").isdigit():
            return "null"  # a non-numeric id can never equal a numeric column
        return str(int(subject))
    return "'" + subject + "'"


def _in(expression: str, subjects: tuple[str, ...], numeric: bool) -> str:
    return f"{expression} in ({', '.join(_literal(s, numeric) for s in subjects)})"


def _is_numeric(column: str, types: dict[str, str]) -> bool:
    return bool(NUMERIC.match(types.get(column.lower(), "string").strip()))


def _field(json: JsonFields, name: str) -> str:
    return f"get_json_object({json.column}, '$.{name}')"


def _any(conditions: list[str]) -> str:
    return "(" + " or ".join(conditions) + ")" if conditions else "false"


def _written(json: JsonFields, name: str, subjects: tuple[str, ...]) -> str:
    """The field written with an erased id in the text, parsed or not: a line cut short or
    otherwise broken still carries it ("user_id": 17 or "user_id":"17", then a quote, a comma,
    a brace or the end)."""
    ids = "|".join(re.escape(s) for s in subjects).replace("\\", "\\\\")
    pattern = f'"{name}"\\\\s*:\\\\s*"?({ids})("|\\\\s*[,}}]|\\\\s*$)'
    return f"{json.column} rlike '{pattern}'"


def subject_predicate(rule: ErasureRule, subjects: tuple[str, ...], types: dict[str, str]) -> str:
    """Rows that are a subject's: any of its columns, or JSON fields, is an erased id."""
    conditions = [_in(c, subjects, _is_numeric(c, types)) for c in rule.columns]
    if rule.json:
        for name in rule.json.fields:
            conditions += [_in(_field(rule.json, name), subjects, False),
                           _written(rule.json, name, subjects)]  # fmt: skip
    return _any(conditions)


def mention_predicate(rule: ErasureRule, subjects: tuple[str, ...], types: dict[str, str]) -> str:
    """Rows that mention a subject where they should not (the detach columns and fields)."""
    conditions = [_in(c, subjects, _is_numeric(c, types)) for c in rule.detach]
    if rule.detach_json:
        conditions += [
            _in(_field(rule.detach_json, f), subjects, False) for f in rule.detach_json.fields
        ]
    return _any(conditions)


def redaction_marker(request: str, json: JsonFields) -> str:
    """The JSON text an erased line of a load ledger becomes, as SQL: the request that erased
    it, then the fields it keeps (`{"_erased":"DSR-42","_kafka_partition":"3",...}`), and no
    other value of the line."""
    kept = "".join(f", '{f}', get_json_object({json.column}, '$.{f}')" for f in json.keep)
    return f"to_json(named_struct('_erased', '{request}'{kept}))"


def detach_assignments(
    rule: ErasureRule, subjects: tuple[str, ...], types: dict[str, str]
) -> list[str]:
    """`set` clauses that null each mention of a subject and keep the rest of the row."""
    assignments = [
        f"{c} = case when {_in(c, subjects, _is_numeric(c, types))} then null else {c} end"
        for c in rule.detach
    ]
    if rule.detach_json:
        text = rule.detach_json.column
        for name in rule.detach_json.fields:
            ids = "|".join(re.escape(s) for s in subjects).replace("\\", "\\\\")
            # "field": 17 or "field": "17", followed by the next field or the end of the object
            pattern = f'("{name}"\\\\s*:\\\\s*)"?(?:{ids})"?(?=\\\\s*[,}}])'
            text = f"regexp_replace({text}, '{pattern}', '$1null')"
        assignments.append(f"{rule.detach_json.column} = {text}")
    return assignments


def plan(
    rule: ErasureRule,
    table: str,
    subjects: tuple[str, ...],
    types: dict[str, str],
    load_ledger: bool,
    request: str,
) -> list[dict[str, Any]]:
    """The statements' parts for one table, in order: [{action, predicate, sql_set}], where
    action is `redact` (a load ledger's rows of a subject), `delete` (any other table's),
    `detach` (mentions nulled). `sql_set` is the update's set clause (none for a delete)."""
    missing = [
        c
        for c in [*rule.columns, *rule.detach]
        + [j.column for j in (rule.json, rule.detach_json) if j]
        if c.lower() not in types
    ]
    if missing:
        raise ErasureError(
            f"erasure of {table}: no column {', '.join(sorted(set(missing)))} in the table"
        )
    steps = []
    if rule.holds_rows:
        predicate = subject_predicate(rule, subjects, types)
        if load_ledger:
            if rule.json is None:
                raise ErasureError(
                    f"erasure of {table}: a load ledger keeps its erased rows redacted, so its"
                    " subject must be found in a raw JSON column (json: {column, fields})"
                )
            marker = redaction_marker(request, rule.json)
            steps.append({"action": "redact", "predicate": predicate,
                          "sql_set": f"{rule.json.column} = {marker}"})  # fmt: skip
        else:
            steps.append({"action": "delete", "predicate": predicate, "sql_set": None})
    if rule.mentions:
        steps.append(
            {
                "action": "detach",
                "predicate": mention_predicate(rule, subjects, types),
                "sql_set": ", ".join(detach_assignments(rule, subjects, types)),
            }
        )
    return steps


def recompute_range(days: list[Any]) -> dict[str, Any] | None:
    """The backfill that recomputes `days` (dates or ISO strings): {start, end, days} with
    `end` the day after the last (dbt's --event-time-end is exclusive) and `days` how many
    distinct days, or none when no day."""
    found = sorted({date.fromisoformat(str(day)[:10]) for day in days if day is not None})
    if not found:
        return None
    return {
        "start": found[0].isoformat(),
        "end": (found[-1] + timedelta(days=1)).isoformat(),
        "days": len(found),
    }
