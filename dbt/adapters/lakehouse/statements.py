"""What a SQL statement may change, read from its text: the adapter keeps a node's `describe`
answers (impl.py, get_columns_in_relation) until a statement may change that relation's
columns, and the table properties of that answer until one may change its definition. Plain
functions, unit-tested without Spark (tests/python/test_statements.py).
"""

from __future__ import annotations

import re

LEADING_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
# statements that read and leave every relation's columns as they were
READS = re.compile(r"(select|describe|desc|show|set)\b", re.IGNORECASE)
# statements that change one relation, named right after the keywords
CHANGES_ONE = re.compile(
    r"(?:create\s+(?:or\s+replace\s+)?(?:global\s+)?(?:temporary\s+)?(?:table|view)"
    r"(?:\s+if\s+not\s+exists)?"
    r"|alter\s+(?:table|view)"
    r"|insert\s+(?:into|overwrite)(?:\s+table)?"
    r"|merge\s+into"
    r"|drop\s+(?:table|view)(?:\s+if\s+exists)?"
    r"|delete\s+from"
    r"|update)"
    r"\s+([`\w.]+)",
    re.IGNORECASE,
)
# statements that write rows and leave a table's definition (its properties) as it was
WRITES_ROWS = re.compile(r"(insert|merge|delete|update)\b", re.IGNORECASE)
EVERY_RELATION = "*"


def changed_relation(sql: str) -> str | None:
    """The identifier of the one relation `sql` may change (lower case, without schema or
    quotes); None for a read; EVERY_RELATION when the statement may change any relation or
    is not recognised (a procedure call, `cache table`, ...): forget everything."""
    statement = sql[LEADING_COMMENTS.match(sql).end() :]
    if READS.match(statement):
        return None
    changed = CHANGES_ONE.match(statement)
    if changed is None:
        return EVERY_RELATION
    return identifier(changed.group(1))


def identifier(name: str) -> str:
    """`schema.table`, `` `schema`.`table` `` or `table` -> `table`, lower case."""
    return name.replace("`", "").rsplit(".", 1)[-1].lower()


def redefined_relation(sql: str) -> str | None:
    """The identifier of the one relation whose definition (table properties, sort order)
    `sql` may change; None for a read or a statement that only writes rows; EVERY_RELATION as
    changed_relation says it."""
    statement = sql[LEADING_COMMENTS.match(sql).end() :]
    if WRITES_ROWS.match(statement):
        return None
    return changed_relation(sql)


# `[key=value,key=value]` as `describe extended` lists table properties: a value may hold
# ", " (a sort order of two columns), a key is a word with dots and dashes before its "="
PROPERTY_SEPARATOR = re.compile(r",(?=[\w.-]+=)")


def table_properties(listed: str) -> dict[str, str]:
    """The `Table Properties` row of `describe extended` as a dict."""
    inner = listed.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    pairs = (part.split("=", 1) for part in PROPERTY_SEPARATOR.split(inner) if "=" in part)
    return {key.strip(): value.strip() for key, value in pairs}
