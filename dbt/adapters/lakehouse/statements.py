"""What a SQL statement may change, read from its text: the adapter keeps a node's `describe`
answers (impl.py, get_columns_in_relation) until a statement may change that relation's
columns. Plain functions, unit-tested without Spark (tests/python/test_statements.py).
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
