"""Query plans as the application's statements get them, for tests that check an index
is used (or a whole table is not read)."""

from __future__ import annotations

import re
from itertools import count

from django.db import connection


def pg_generic_plan(sql: str, params: list) -> str:
    """PostgreSQL's generic plan of a Django-style statement (``%s`` placeholders): the
    plan a prepared statement gets, blind to the values, as the pack reads run."""
    from psycopg import sql as pgsql

    numbers = count(1)
    numbered = re.sub(r"%%|%s", lambda m: "%" if m[0] == "%%" else f"${next(numbers)}", sql)
    values = ", ".join(pgsql.Literal(v).as_string(connection.connection) for v in params)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE plan_probe AS {numbered}".replace("%", "%%"))
        try:
            cursor.execute(f"EXPLAIN EXECUTE plan_probe({values})".replace("%", "%%"))
            return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE plan_probe")


def plan(sql: str, params: list) -> str:
    """The statement's plan as it runs: SQLite's, or PostgreSQL's generic plan."""
    if connection.vendor == "postgresql":
        return pg_generic_plan(sql, params)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return "\n".join(str(row[-1]) for row in cursor.fetchall())
