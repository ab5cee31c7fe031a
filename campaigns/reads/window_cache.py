"""The pack's window of recent turns, kept per process between one viewer's packs.

A pack reads the turns of its recent rounds, its hinge anchors and its last N transcript
turns (`packs.window_turn_query`: about 160 turns when the recent window may lend, ~1 ms
on SQLite and most of PostgreSQL's second round trip), and between two packs that window
has mostly moved on by the turns appended since. This cache keeps the window's rows per
(database, experiment, viewer, window shape) and reads only the readable turns appended
since (`packs.turns_after_query`), from which the new window follows.

Exact, under the postings cache's stamp (`postings_cache`): while the viewer's count of
the logged changes it may read stands, its readable turns change only by appends, which
come past every seq ever given (`packs.newest_logged_seq`). Then the window's bounds only
move up — a later first round, a later hinge round, a later Nth-newest transcript turn —
so every row of the new window is a kept row or an appended one, and the Nth-newest
transcript turn is found among them.
A bound that moved down (a command that widens the window), a count that moved, or more
than `MAX_APPENDED` turns appended reads the window in full. The appended turns' read is
itself bounded by `MAX_APPENDED` seqs, and `finish` takes it only when the stamp's newest
seq is within them: so a read made for an older newest seq (the pack loader sends round
trip 2 ahead with the role's last pack's, `context_ahead.ahead`) is still exact, and small.
The count is read before the window (`context.pack_input_for_role`): rows read after it
are never older than it, so a change between the two can only make the kept rows
unusable, never wrongly usable.

As for the other caches, entries are stored only from reads outside a transaction, never
while an import waits for its term rows, and a hidden write leaves the viewer's count —
and so its next pack's work — as it was. Per process and bounded (`MAX_WINDOWS`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.db import connection

from campaigns.reads import packs
from campaigns.reads.packs import (
    TURN_HINGE,
    TURN_KIND,
    TURN_MONOLOGUE,
    TURN_ROUND,
    TURN_SEQ,
)
from campaigns.reads.postings_cache import Stamp
from campaigns.reads.precompiled import Query, database_key, keep_bounded

MAX_WINDOWS = 256  # (experiment, viewer, shape) entries, each a window's rows
MAX_APPENDED = 256  # more turns appended since than this: read the window in full


@dataclass(frozen=True)
class Bounds:
    """What a window holds: rounds from ``from_round``, hinge turns from
    ``hinge_from_round``, and turns from the ``last_turns``-th newest transcript turn's
    seq (``transcript_from``; 0 when there are fewer)."""

    from_round: int | None
    hinge_from_round: int | None
    last_turns: int


@dataclass(frozen=True)
class _Entry:
    changes: int
    last_seq: int  # the rows are every window row at or below this seq
    bounds: Bounds
    transcript_from: int
    rows: tuple[tuple, ...]


@dataclass
class WindowRead:
    """How round trip 2 reads the window: ``query`` (the full window, or the turns
    appended since a kept one), finished by `finish`."""

    query: Query | None
    full: Query | None
    key: tuple | None = None
    bounds: Bounds | None = None
    entry: _Entry | None = None


_lock = threading.Lock()
_entries: OrderedDict[tuple, _Entry] = OrderedDict()
stats = {"kept": 0, "read": 0}


def window_read(
    *, experiment_id: int, viewer, needs, created_at=None, last_seq: int | None = None
) -> WindowRead:
    """The window's read for round trip 2: the turns appended since a kept window that
    its bounds allow, or the full window. Without ``created_at`` and ``last_seq`` (no
    stamp: an import waits for its term rows) the full window, and nothing is kept."""
    bounds = Bounds(needs.from_round, needs.hinge_from_round, needs.last_turns)
    full = packs.window_turn_query(
        experiment_id=experiment_id,
        viewer=viewer,
        from_round=bounds.from_round,
        hinge_from_round=bounds.hinge_from_round,
        last_turns=bounds.last_turns,
    )
    if full is None or created_at is None or last_seq is None:
        return WindowRead(query=full, full=full)
    key = (
        database_key(),
        experiment_id,
        created_at,
        viewer,
        bounds.from_round is not None,
        bounds.hinge_from_round is not None,
        bounds.last_turns,
    )
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
    if (
        entry is not None
        and _not_below(bounds.from_round, entry.bounds.from_round)
        and _not_below(bounds.hinge_from_round, entry.bounds.hinge_from_round)
        and last_seq - entry.last_seq <= MAX_APPENDED
    ):
        after = packs.turns_after_query(
            experiment_id=experiment_id,
            viewer=viewer,
            since=entry.last_seq,
            until=entry.last_seq + MAX_APPENDED,
        )
        return WindowRead(query=after, full=full, key=key, bounds=bounds, entry=entry)
    return WindowRead(query=full, full=full, key=key, bounds=bounds)


def finish(read: WindowRead, rows: list[tuple], stamp: Stamp | None) -> list[tuple]:
    """The window's rows in seq order, from what ``read.query`` gave — reading the full
    window now when the kept one cannot be used (``stamp``'s count moved, more turns were
    appended than the read reaches, or its transcript turns fell short) — and kept for
    the next pack."""
    window: list[tuple] | None = None
    bound: int | None = None  # the window's Nth-newest transcript seq, when merged
    if read.entry is None:
        window = rows
    elif (
        stamp is not None
        and read.entry.changes == stamp.changes
        and stamp.last_seq - read.entry.last_seq <= MAX_APPENDED  # none past the read's
    ):
        merged = [*read.entry.rows, *rows]
        found = transcript_from(merged, read.bounds.last_turns)
        if found >= read.entry.transcript_from:
            window = [row for row in merged if _holds(row, read.bounds, found)]
            bound = found
    if window is None:
        window = read.full.rows()
    with _lock:
        stats["kept" if bound is not None else "read"] += 1
    if read.key is not None and stamp is not None and not connection.in_atomic_block:
        if bound is None:
            bound = transcript_from(window, read.bounds.last_turns)
        kept = tuple(row for row in window if row[TURN_SEQ] <= stamp.last_seq)
        entry = _Entry(stamp.changes, stamp.last_seq, read.bounds, bound, kept)
        with _lock:
            keep_bounded(_entries, {read.key: entry}, MAX_WINDOWS)
    return window


def _not_below(now: int | None, kept: int | None) -> bool:
    return now is None or (kept is not None and now >= kept)


def transcript_from(rows: list[tuple], last_turns: int) -> int:
    """The seq of the ``last_turns``-th newest transcript row (not a monologue) of
    ``rows``, 0 when there are fewer (the window then holds every readable turn)."""
    if not last_turns:
        return 0
    seen = 0
    for row in reversed(rows):
        if row[TURN_KIND] != TURN_MONOLOGUE:
            seen += 1
            if seen == last_turns:
                return row[TURN_SEQ]
    return 0


def _holds(row: tuple, bounds: Bounds, transcript_from: int) -> bool:
    """Whether the window (`packs.window_turn_query`'s parts) holds ``row``."""
    if bounds.from_round is not None and row[TURN_ROUND] >= bounds.from_round:
        return True
    if (
        bounds.hinge_from_round is not None
        and row[TURN_HINGE]
        and row[TURN_ROUND] >= bounds.hinge_from_round
    ):
        return True
    return bool(bounds.last_turns) and row[TURN_SEQ] >= transcript_from


def clear() -> None:
    """Forget every window (tests, benchmarks)."""
    with _lock:
        _entries.clear()
        for name in stats:
            stats[name] = 0
