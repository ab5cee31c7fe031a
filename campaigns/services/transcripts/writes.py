"""Bulk writes of an import's turns: COPY on PostgreSQL; multi-row INSERTs on SQLite. Either
way their search rows are left to the indexing task after commit."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.conf import settings
from django.db import connection
from django.utils import timezone

from campaigns.models import SearchBacklog
from campaigns.services.dispatch import send_on_commit
from context_engine import token_pool

CHUNK = 2000  # turns counted, and written, per step


def turn_texts(items: list) -> list[str]:
    """Each item's content as `clean_content` would accept it ("" where it would not:
    that turn fails validation, and nothing is stored)."""
    texts = []
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        texts.append(content if type(content) is str else _plain(content))
    return texts


def _plain(value: object) -> str:
    """A str subclass (Python callers) as a plain str (it goes to a helper process)."""
    return str.__str__(value) if isinstance(value, str) else ""


def counting(texts: list[str]) -> Iterator[list[int]]:
    """The texts' token counts, chunk by chunk: helper processes
    (`BABEL_IMPORT_COUNT_PROCESSES`) start on the first chunks at once, beside the
    caller's own work."""
    chunks = [texts[start : start + CHUNK] for start in range(0, len(texts), CHUNK)]
    return token_pool.counting(chunks, settings.BABEL_IMPORT_COUNT_PROCESSES)


def pg_insert(pk: int, rows: list[tuple], counts: Iterator[list[int]]) -> Sequence[int]:
    """COPY, in text form built here (psycopg's per-row adaptation cost as much as the
    counting): one statement, so the statement-level triggers run once.

    ``search_indexed`` false: the rows get no term rows until the background task
    (`index_imported_turns`, sent after commit) indexes them; meanwhile the experiment's
    `SearchBacklog` row has searches scan them too.
    """
    created_at = timezone.now().isoformat()
    with connection.cursor() as cursor, cursor.cursor.copy(_COPY_TURNS) as copy:
        for start, chunk_counts in zip(range(0, len(rows), CHUNK), counts, strict=True):
            chunk = rows[start : start + CHUNK]
            lines = [
                f"{pk}\t{seq}\t{n}\t{created_at}\t{r}\t{speaker}\t{kind}\t"
                f"{_copy_text(content)}\t{vis}\t{tags}\t{hinge}\t{review}\t{key}\tf\n"
                for seq, (r, speaker, kind, content, vis, tags, hinge, review, key), n in zip(
                    range(start + 1, start + len(chunk) + 1),
                    _copy_rows(chunk),
                    chunk_counts,
                    strict=True,
                )
            ]
            copy.write("".join(lines))
    SearchBacklog.objects.create(experiment_id=pk)
    send_on_commit("index_turn_search", pk)
    return _TurnIds(pk, len(rows))


class _TurnIds(Sequence):
    """PostgreSQL: the imported turns' ids in list order, read only if lore points at
    turns (most transcripts' lore does not; COPY returns no ids)."""

    def __init__(self, experiment_id: int, count: int):
        self.experiment_id, self.count, self.ids = experiment_id, count, None

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index):
        if self.ids is None:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT id FROM campaigns_turn WHERE experiment_id = %s ORDER BY seq",
                    [self.experiment_id],
                )
                self.ids = [row[0] for row in cursor.fetchall()]
        return self.ids[index]


def _copy_text(value: str) -> str:
    """A value in COPY's text format: backslash, tab, newline and return escaped."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        value = value.replace("\\", "\\\\").replace("\t", "\\t")
        value = value.replace("\n", "\\n").replace("\r", "\\r")
    return value


def _copy_rows(chunk: list[tuple]):
    """Rows with their non-content columns in COPY text form (JSON texts repeat: the
    memo escapes each distinct one once)."""
    memo: dict[str | None, str] = {None: "\\N"}
    for r, speaker, kind, content, vis, tags, hinge, review, key in chunk:
        vis_text = memo.get(vis)
        if vis_text is None:
            vis_text = memo[vis] = _copy_text(vis)
        tags_text = memo.get(tags)
        if tags_text is None:
            tags_text = memo[tags] = _copy_text(tags)
        yield (
            r,
            _copy_text(speaker),
            kind,
            content,
            vis_text,
            tags_text,
            "t" if hinge else "f",
            "t" if review else "f",
            "\\N" if key is None else _copy_text(key),
        )


def sqlite_insert(
    pk: int, texts: list[str], counts: Iterator[list[int]], clean, validated
) -> Sequence[int]:
    """``clean()`` (the turns' validation), ``validated()`` once it is done, then
    multi-row INSERTs of the turns with ids assigned here, each chunk as soon as its
    counts are in.

    The ids continue the table's AUTOINCREMENT sequence: this transaction already holds
    SQLite's single write lock (it created the experiment), so no other connection can
    take one meanwhile. Multi-row INSERTs (as many rows each as SQLite's variable limit
    allows) take half the time of an executemany, which pays a statement per row. On the
    driver's connection, in the same transaction: Django's wrapper would rewrite, and
    with DEBUG log, every one of those thousands of parameters.

    The turns' term rows (migration 0038) are left to `index_imported_turns` after
    commit, as on PostgreSQL: the insert trigger is dropped while the turns go in (a
    failure rolls it back with them) and the experiment's `SearchBacklog` row has
    searches scan its turns meanwhile.
    """
    import sqlite3

    raw = connection.connection
    with _sqlite_cache(raw, sum(map(len, texts))):
        first = _next_turn_id(raw)
        ids = range(first, first + len(texts))
        rows = clean()
        validated()
        trigger = _sqlite_drop_terms_trigger(raw)
        limit = raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        per_statement = max(1, min(CHUNK, limit // (_TURN_COLUMN_COUNT + 1)))
        statements: dict[int, str] = {}
        created_at = connection.ops.adapt_datetimefield_value(timezone.now())
        for start, chunk_counts in zip(range(0, len(rows), CHUNK), counts, strict=True):
            chunk = rows[start : start + CHUNK]
            for offset in range(0, len(chunk), per_statement):
                part = chunk[offset : offset + per_statement]
                at = start + offset
                values = [
                    value
                    for i, row, count in zip(
                        range(at, at + len(part)),
                        part,
                        chunk_counts[offset : offset + len(part)],
                        strict=True,
                    )
                    for value in (ids[i], pk, i + 1, count, created_at, *row)
                ]
                sql = statements.get(len(part))
                if sql is None:
                    sql = _INSERT_TURNS + ", ".join([_ROW] * len(part))
                    statements[len(part)] = sql
                raw.execute(sql, values)
        if trigger is not None:
            raw.execute(trigger)
    SearchBacklog.objects.create(experiment_id=pk)
    send_on_commit("index_turn_search", pk)
    return ids


@contextmanager
def _sqlite_cache(raw, text_bytes: int):
    """A page cache that holds the import's writes (table, indexes, FTS: ~3× the text),
    up to 256 MB, for its length: SQLite's default 2 MB spills dirty pages mid-write."""
    (previous,) = raw.execute("PRAGMA cache_size").fetchone()
    kib = min(256 * 1024, max(-previous if previous < 0 else 0, 3 * text_bytes // 1024))
    raw.execute(f"PRAGMA cache_size = -{int(kib)}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA cache_size = {int(previous)}")


def _next_turn_id(raw) -> int:
    """The id AUTOINCREMENT would give the next turn (this transaction holds the lock)."""
    found = raw.execute(
        "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'campaigns_turn'), 0),"
        " coalesce((SELECT max(id) FROM campaigns_turn), 0))"
    ).fetchone()
    return found[0] + 1


_TERMS_TRIGGER = "turn_terms_insert"


def _sqlite_drop_terms_trigger(raw) -> str | None:
    """Drop the turns' term-row insert trigger; its SQL, for the caller to recreate once
    the turns are in (None: not migrated this far, nothing to keep in sync)."""
    found = raw.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", [_TERMS_TRIGGER]
    ).fetchone()
    if found is None:
        return None
    raw.execute(f"DROP TRIGGER {_TERMS_TRIGGER}")
    return found[0]


_TURN_COLUMNS = (
    "experiment_id, seq, tokens, created_at, round, speaker, kind, content, visibility, "
    "tags, hinge, needs_review, key"
)
_TURN_COLUMN_COUNT = len(_TURN_COLUMNS.split(","))
_ROW = "(" + ", ".join(["?"] * (_TURN_COLUMN_COUNT + 1)) + ")"  # the driver's placeholders
_INSERT_TURNS = f"INSERT INTO campaigns_turn (id, {_TURN_COLUMNS}) VALUES "
_COPY_TURNS = f"COPY campaigns_turn ({_TURN_COLUMNS}, search_indexed) FROM STDIN"
