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
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import psycopg
import psycopg.adapt
from django.db import DEFAULT_DB_ALIAS, connection, connections
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
    """One compiled statement: SQL text plus, per parameter, a slot name or a literal.

    ``columns``: the result's column names, each with whether it is a JSON column (what
    `run_all` needs to fetch several statements in one round trip); None if unknown.

    ``prepare``: run as a prepared statement on PostgreSQL (where the connection allows
    it, as `run_all` does): for statements whose generic plan is as good as any, run on
    their own rather than batched (ranked retrieval's), so they are not planned per call.
    """

    def __init__(
        self,
        sql: str,
        params: Sequence[tuple[str | None, Any]],
        columns: Sequence[tuple[str, bool]] | None = None,
        prepare: bool = False,
    ):
        self.sql = sql
        self.params = tuple(params)
        self.columns = None if columns is None else tuple(columns)
        self.prepare = prepare

    def bind(self, values: dict[str, Any]) -> list[Any]:
        return [values[name] if name is not None else literal for name, literal in self.params]

    def rows(self, **values: Any) -> list[tuple]:
        if self.prepare or connection.vendor == "sqlite":
            return _fetch_all(self.sql, self.bind(values))
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.bind(values))
            return cursor.fetchall()


def compile_once(
    key: Hashable, build: Callable[[_Slots], QuerySet], *, prepare: bool = False
) -> Precompiled:
    """The compiled form of ``build(slots)`` for ``key`` on the current database vendor.

    ``build`` must give the same SQL text for the same key: everything that changes the
    text (a LIMIT, an omniscient viewer, which UNION parts are present) belongs in the key.
    ``prepare``: see `Precompiled`.
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
    compiled = Precompiled(sql, bound, _columns(queryset), prepare=prepare)
    with _lock:
        _compiled[full_key] = compiled
    return compiled


def _columns(queryset: QuerySet) -> tuple[tuple[str, bool], ...] | None:
    """(name, is JSON) per column of a ``values_list`` queryset, annotations in their
    place (None for anything else)."""
    from django.db.models import JSONField

    query = queryset.query
    selected = query.selected
    if not query.values_select and not selected:
        return None
    names = list(selected) if selected else list(query.values_select)
    columns = []
    for name in names:
        annotation = query.annotation_select.get(name)
        if annotation is not None:
            columns.append((name, isinstance(annotation.output_field, JSONField)))
            continue
        model, field = queryset.model, None
        for part in name.split("__"):
            field = model._meta.get_field(part)
            model = field.related_model or model
        columns.append((name, isinstance(field, JSONField)))
    return tuple(columns)


@dataclass
class Query:
    """One precompiled statement with its values, and what to do with its rows."""

    compiled: Precompiled
    values: dict[str, Any]
    post: Callable[[list[tuple]], list[tuple]] | None = None
    # Rows kept by the client between runs, under this key (kept rows: `ROW_VERSION`).
    keep: Hashable | None = None

    def finish(self, rows: list[tuple]) -> list[tuple]:
        return self.post(rows) if self.post is not None else rows

    def rows(self) -> list[tuple]:
        return self.finish(self.compiled.rows(**self.values))


def run_all(queries: Sequence[Query | None]) -> list[list[tuple]]:
    """The rows of each query (``[]`` for None), in as few round trips as the database allows.

    PostgreSQL: one statement, each query a scalar subquery aggregating its rows into a
    JSON array of arrays, in the query's own row order (JSON columns cast to text, so rows
    are exactly what `Precompiled.rows` returns). Every query's SQL — visibility rules
    included — is unchanged inside it. A pack's independent reads cost one round trip
    instead of seven, which matters most when the database server shares busy CPUs.
    SQLite is in-process: one statement each, on one cursor (`_Statements`).
    """
    live = [(i, q) for i, q in enumerate(queries) if q is not None]
    results: list[list[tuple]] = [[] for _ in queries]
    if connection.vendor == "sqlite" and len(live) > 1:
        with _Statements() as run:  # one cursor for all
            for i, query in live:
                rows = run(query.compiled.sql, query.compiled.bind(query.values), one=False)
                results[i] = query.finish(rows)
        return results
    batchable = connection.vendor == "postgresql" and all(q.compiled.columns for _, q in live)
    if len(live) < 2 or not batchable:
        for i, query in live:
            results[i] = query.rows()
        return results
    params: list[Any] = []
    kept: dict[int, tuple[tuple, _Kept | None]] = {}  # query's position → (key, entry)
    for n, (_, query) in enumerate(live):
        bound = query.compiled.bind(query.values)
        if query.keep is None:
            params += bound
            continue
        key = (database_key(), query.keep)
        with _lock:
            entry = _kept.get(key)
        kept[n] = (key, entry)
        params += [entry.stamp if entry is not None else None, *bound, *bound]  # text order
    sql = _batched_sql(tuple((query.compiled, query.keep is not None) for _, query in live))
    row = _fetch_one(sql, params)
    for n, ((i, query), cell) in enumerate(zip(live, row, strict=True)):
        decoded = json.loads(cell) if isinstance(cell, str | bytes) else cell
        if n not in kept:
            results[i] = query.finish([tuple(values) for values in decoded])
            continue
        (key, entry), (stamp, fresh) = kept[n], decoded
        if fresh is None and entry is not None and entry.stamp == stamp:
            results[i] = list(entry.rows)
            kept_stats["kept"] += 1
            continue
        results[i] = query.finish([tuple(values) for values in fresh])
        kept_stats["read"] += 1
        if not connection.in_atomic_block:  # committed rows only
            with _lock:
                keep_bounded(_kept, {key: _Kept(stamp, tuple(results[i]))}, MAX_KEPT)
    return results


@lru_cache(maxsize=256)
def _batched_sql(statements: tuple[tuple[Precompiled, bool], ...]) -> str:
    """`run_all`'s one statement for these (statement, kept) pairs, made once: the same
    text object each time, so its conversion (`_numbered`) is found by a hash kept on it
    instead of hashing ~20 KB of SQL again."""
    parts = []
    for n, (compiled, kept) in enumerate(statements):
        alias = f"_q{n}"
        cells = ", ".join(
            f'{alias}."{name}"' + ("::text" if is_json else "")
            for name, is_json in compiled.columns
        )
        rows_sql = (
            f"(SELECT coalesce(json_agg(json_build_array({cells})), '[]'::json) "
            f"FROM ({compiled.sql}) AS {alias})"
        )
        if not kept:
            parts.append(rows_sql)
            continue
        # The readable rows' stamp, and their rows only when it is not the kept one's
        # (a CASE runs its subquery only when it gets there).
        parts.append(
            f"(SELECT json_build_array(_s{n}.stamp, CASE WHEN _s{n}.stamp = %s THEN NULL "
            f"ELSE {rows_sql} END) FROM (SELECT md5(coalesce(string_agg("
            f"{alias}k.\"id\"::text || ':' || {alias}k.\"{ROW_VERSION}\", ',' "
            f"ORDER BY {alias}k.\"id\"), '')) AS stamp "
            f"FROM ({compiled.sql}) AS {alias}k) AS _s{n})"
        )
    return "SELECT " + ", ".join(parts)


# Kept rows (PostgreSQL, in `run_all`). A statement that reads the same rows pack after
# pack (a campaign's lore: ~60 rows, a quarter of the merged read's time, as JSON built,
# sent and parsed) may be run as `Query(..., keep=key)` with an ``id`` column and a
# ``row_version`` one (`row_version()`: the row's ``xmin``, which every write of a row
# changes). The server then sends the rows' stamp — a hash of each row's id and version,
# over exactly the rows the statement reads — and the rows themselves only when the stamp
# is not the one kept under that key with its rows. Exact: a row version is one write's,
# and only the committed last version of a row is visible outside the transaction that
# wrote it; rows are kept only from reads outside a transaction. The stamp covers the
# statement's own rows, so a write to rows it does not read (lore the viewer may not
# read) changes nothing for it, not even its time. Per process and bounded (`MAX_KEPT`).
ROW_VERSION = "row_version"
MAX_KEPT = 1024  # (database, key) entries


@dataclass(frozen=True)
class _Kept:
    stamp: str
    rows: tuple[tuple, ...]


_kept: OrderedDict[tuple, _Kept] = OrderedDict()
kept_stats = {"kept": 0, "read": 0}  # runs served from kept rows, runs that sent them


def row_version(table: str):
    """The ``row_version`` column of a kept query on ``table`` (PostgreSQL's ``xmin``)."""
    from django.db.models import CharField
    from django.db.models.expressions import RawSQL

    return RawSQL(f'"{table}"."xmin"::text', [], output_field=CharField())


def without_row_version(rows: list[tuple]) -> list[tuple]:
    """A kept query's rows as its callers read them: the version column (last) left out."""
    return [row[:-1] for row in rows]


def clear_kept() -> None:
    """Forget every kept row (tests, benchmarks)."""
    with _lock:
        _kept.clear()
        kept_stats.update(kept=0, read=0)


def keep_bounded(entries: OrderedDict, kept: dict, limit: int) -> None:
    """Add ``kept`` to ``entries`` as the most recently used, and drop the least recently
    used past ``limit`` (the pack caches' store; call under the cache's lock)."""
    entries.update(kept)
    for key in kept:
        entries.move_to_end(key)
    while len(entries) > limit:
        entries.popitem(last=False)


def database_key() -> tuple:
    """The database the current connection reads (entries of another are not its)."""
    settings = connection.settings_dict
    return (connection.alias, connection.vendor, settings["NAME"], settings.get("HOST"))


def _fetch_one(sql: str, params: list[Any]) -> tuple:
    """The statement's one row (see `_fetch`)."""
    rows = _fetch(sql, params, one=True)
    return rows[0] if rows else None


def _fetch_all(sql: str, params: list[Any]) -> list[tuple]:
    """Every row of the statement, prepared as in `_fetch_one`."""
    return _fetch(sql, params, one=False)


def _fetch(sql: str, params: list[Any], *, one: bool) -> list[tuple]:
    """The statement's rows (its first only, when ``one``); see `_Statements`."""
    with _Statements() as run:
        return run(sql, params, one=one)


class _Statements:
    """Runs statements on one cursor: ``with _Statements() as run: run(sql, params,
    one=...)`` gives a statement's rows (its first only, when ``one``), prepared on
    PostgreSQL when the connection allows it.

    A batched pack read took ~2.7 ms to plan and ~1 ms to run. Prepared (once per
    connection and statement shape; psycopg keeps the names) and run on a generic plan
    (`plan_cache_mode`, set with `BABEL_PG_PREPARE`), it is planned once. On SQLite the
    statement runs with its placeholders rewritten once (`_qmark`). Queries still go
    through Django's cursor wrapper (errors, execute wrappers) and are logged like any
    other when queries are being recorded.

    The connection is looked up once (each attribute read through `django.db.connection`
    looks it up again in a context-local store) and one cursor serves every statement:
    on SQLite a pack runs a dozen statements of a few microseconds each, and opening two
    wrapped cursors and reading the proxy for each took ~20 µs of every one.
    """

    wrapped = None

    cursor = None

    def __enter__(self) -> Callable[..., list[tuple]]:
        db = self.db = connections[DEFAULT_DB_ALIAS]
        # What `db.cursor()` does before it makes a cursor, without making one (~15 µs).
        db.close_if_health_check_failed()
        db.ensure_connection()
        db.validate_thread_sharing()
        raw_connection = self.raw_connection = db.connection
        if db.vendor == "sqlite":
            raw_cursor, self.convert = raw_connection.cursor(), _qmark
        elif db.vendor == "postgresql" and raw_connection.prepare_threshold is not None:
            raw_cursor, self.convert = _PreparingCursor(raw_connection), _numbered
        else:
            self.cursor = db.cursor()  # no driver-level path: Django's cursor as it is
            return self.run
        self.wrapped = db.make_cursor(raw_cursor)
        self.logged = db.queries_logged
        return self.run

    def __exit__(self, *exc_info) -> None:
        if self.wrapped is not None:
            self.wrapped.__exit__(*exc_info)
        if self.cursor is not None:
            self.cursor.__exit__(*exc_info)

    def run(self, sql: str, params: list[Any], *, one: bool) -> list[tuple]:
        if self.wrapped is None:  # no driver-level path: Django's cursor as it is
            self.cursor.execute(sql, params)
            return [self.cursor.fetchone()] if one else self.cursor.fetchall()
        started = time.monotonic()
        self.wrapped.execute(self.convert(sql), params)
        rows = [self.wrapped.fetchone()] if one else self.wrapped.fetchall()
        if self.logged:
            self.db.queries_log.append(
                {
                    "sql": _logged_sql(self.raw_connection, sql, params),
                    "time": f"{time.monotonic() - started:.3f}",
                }
            )
        return rows


@lru_cache(maxsize=1024)
def _qmark(sql: str) -> str:
    """``sql`` in SQLite's own placeholder style, converted once per statement text.

    Django's SQLite cursor rewrites ``%s`` to ``?`` with a regular expression on every
    execute: over a pack's dozen statements (the postings one is 20 KB of SQL) that
    was a few tenths of a millisecond a pack. The precompiled statements run on the
    driver's cursor (still inside Django's wrapper: errors, execute wrappers) with the
    text rewritten here once, exactly as Django would.
    """
    from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX

    return FORMAT_QMARK_REGEX.sub("?", sql).replace("%%", "%")


@lru_cache(maxsize=1024)
def _numbered(sql: str) -> bytes:
    """``sql`` with PostgreSQL's own numbered placeholders, converted once per statement.

    psycopg converts ``%s`` placeholders on every execute and caches the conversion only
    for statements under 4 KB: the pack's batched reads, postings and hits (10-20 KB
    each) were parsed again on every pack, ~0.5 ms a pack. `_PreparingCursor` is a
    raw cursor, which sends ``$n`` placeholders as they are.

    As bytes, one object per statement: psycopg looks a prepared statement up by its
    text's bytes, and a ``str`` was encoded into new bytes, hashed whole, on every
    execute (a bytes object keeps its hash).
    """
    numbers = iter(range(1, sql.count("%s") + 1))
    text = _PLACEHOLDER.sub(lambda m: "%" if m[0] == "%%" else f"${next(numbers)}", sql)
    return text.encode()


_PLACEHOLDER = re.compile(r"%%|%s")


def _logged_sql(raw_connection, sql: str, params: list[Any]) -> str:
    if connection.vendor == "postgresql":
        return psycopg.ClientCursor(raw_connection).mogrify(sql, params)
    return connection.ops.last_executed_query(None, sql, params)


class _JsonbText(psycopg.adapt.Loader):
    """A ``jsonb`` value in binary, as its JSON text: what Django's own (text) reads give
    on PostgreSQL and what SQLite gives, so a row is the same tuple on both vendors and
    hashable (the row views are memoised by row: `adapters.turn_view_row`). psycopg's
    binary loader would parse it into lists and dicts, rebuilt every read."""

    format = psycopg.pq.Format.BINARY

    def load(self, data) -> str:
        if data and data[0] != 1:  # the binary format's version byte
            raise psycopg.DataError(f"unknown jsonb binary format: {data[0]}")
        return bytes(data[1:]).decode()


class _PreparingCursor(psycopg.RawCursor):
    """Binds parameters on the server and prepares every statement it runs (given with
    ``$n`` placeholders: `_numbered`), and takes its rows in binary: the same Python
    values, parsed faster (a pack's 1,300 postings: 2.6 -> 1.8 ms), ``jsonb`` as text
    (`_JsonbText`)."""

    def __init__(self, connection, **kwargs):
        super().__init__(connection, **kwargs)
        self.adapters.register_loader("jsonb", _JsonbText)

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=True)


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
