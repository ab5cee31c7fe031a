"""Query plans as the application's statements get them, for tests that check an index
is used (or a whole table is not read)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count

from django.db import DatabaseError, connection, transaction

from tests.services import unavailable


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


@contextmanager
def pg_nested_plans() -> Iterator[list[str]]:
    """PostgreSQL: the plans, as run, of the statements that functions run inside the
    block (``auto_explain``; statements the client sends itself are included too).

    Each entry starts with ``Query Text:``. Needs a superuser connection (``LOAD``; else
    the test is skipped, or fails where services are required) and an open transaction:
    the settings are ``SET LOCAL``.
    """
    plans: list[str] = []
    settings = (
        "auto_explain.log_min_duration = 0",
        "auto_explain.log_nested_statements = on",
        "auto_explain.log_analyze = on",
        "auto_explain.log_timing = off",
        "client_min_messages = log",
    )
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("LOAD 'auto_explain'")
    except DatabaseError as exc:
        unavailable(f"auto_explain cannot be loaded on this connection ({exc})")
    with connection.cursor() as cursor:
        for setting in settings:
            cursor.execute(f"SET LOCAL {setting}")

    def collect(diagnostic) -> None:
        message = diagnostic.message_primary or ""
        if "plan:" in message:
            plans.append(message.split("plan:", 1)[1].strip())

    raw = connection.connection
    raw.add_notice_handler(collect)
    try:
        yield plans
    finally:
        raw.remove_notice_handler(collect)
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL auto_explain.log_min_duration = -1")
            cursor.execute("SET LOCAL client_min_messages = notice")
