"""Compile an ORM query once, run it many times as plain SQL returning tuples.

Hot reads (the pack loader, packs on every dashboard refresh) spent most of their time in
Django building and compiling the same few querysets and instantiating model objects.
`Precompiled` builds the queryset once per *shape* (database vendor + whatever changes
the SQL text), records which parameter positions are the caller's values, and afterwards
only binds values and executes: the SQL — visibility rules included — is exactly what the
ORM produces for the same filters, so there is no second copy of any rule.

Values are marked with `slot(name, kind)`: a sentinel that cannot occur in real data,
recognised in the compiled parameter list and replaced at execution time. Queries run
through Django's cursor, so they are counted by `CaptureQueriesContext` like any other.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from django.db import connection
from django.db.models import QuerySet

_INT_BASE = 2_147_000_000  # inside a 32-bit integer column, far above any real round or id
_lock = threading.Lock()
_compiled: dict[Hashable, Precompiled] = {}


class _Slots:
    """Sentinel values handed to a query builder, one per named slot."""

    def __init__(self) -> None:
        self.by_value: dict[tuple[type, Any], str] = {}

    def int(self, name: str) -> int:
        value = _INT_BASE + len(self.by_value) + 1
        self.by_value[(int, value)] = name
        return value

    def str(self, name: str) -> str:
        value = f"\ue000slot:{name}\ue000"
        self.by_value[(str, value)] = name
        return value


class Precompiled:
    """One compiled statement: SQL text plus, per parameter, a slot name or a literal."""

    def __init__(self, sql: str, params: Sequence[tuple[str | None, Any]]):
        self.sql = sql
        self.params = tuple(params)

    def bind(self, values: dict[str, Any]) -> list[Any]:
        return [values[name] if name is not None else literal for name, literal in self.params]

    def rows(self, **values: Any) -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.bind(values))
            return cursor.fetchall()


def compile_once(key: Hashable, build: Callable[[_Slots], QuerySet]) -> Precompiled:
    """The compiled form of ``build(slots)`` for ``key`` on the current database vendor.

    ``build`` must give the same SQL text for the same key: everything that changes the
    text (a LIMIT, an omniscient viewer, which UNION parts are present) belongs in the key.
    """
    full_key = (connection.vendor, key)
    found = _compiled.get(full_key)
    if found is not None:
        return found
    slots = _Slots()
    queryset = build(slots)
    sql, params = queryset.query.sql_with_params()
    bound: list[tuple[str | None, Any]] = []
    for param in params:
        name = slots.by_value.get(_slot_key(param)) if _hashable(param) else None
        bound.append((name, None) if name is not None else (None, param))
    missing = set(slots.by_value.values()) - {name for name, _ in bound if name}
    if missing:  # a slot the ORM folded away or transformed: the SQL would be wrong
        raise ValueError(f"Slots not found in the compiled query: {sorted(missing)}")
    compiled = Precompiled(sql, bound)
    with _lock:
        _compiled[full_key] = compiled
    return compiled


def _hashable(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def _slot_key(value: int | str) -> tuple[type, Any]:
    """Plain type and value: on PostgreSQL Django passes integers as psycopg ``Int4``."""
    return (int, int(value)) if isinstance(value, int) else (str, str(value))


def json_value(raw: Any) -> Any:
    """A JSON column as the ORM's JSONField would return it (text on both vendors)."""
    if raw is None:
        return None
    if isinstance(raw, str | bytes):
        return json.loads(raw)
    return raw
