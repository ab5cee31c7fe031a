"""The ranked hits' rows and their neighbours, kept per process between one viewer's packs.

After its postings (`postings_cache`), a pack's ranked retrieval reads its hits' rows with
their neighbouring turns and their rounds' opening turns (`search.hit_query`): at 50,000
turns about 140 rows, each hit's neighbours found by walking the turns' index under the
selector's rule — about 1 ms a pack on SQLite and 3 ms on PostgreSQL, where most hits
are the previous pack's. This cache keeps, per (database, experiment, viewer, neighbour
count, hit), what that statement gives for the hit: its row, and the rows of its
neighbours and its round's opening turn. A pack reads only the hits it does not hold
(one statement, none when it holds them all).

Exact, under the postings cache's `Stamp`:
- An appended turn takes the experiment's next seq, after every turn: it changes no row,
  no earlier neighbour and no opening turn a round already has. It can only become a
  later neighbour of a hit with fewer than the wanted readable turns after it, or the
  opening of a hit's round that had none readable. An entry missing one of those
  ("open") holds only while no turn came past the newest seq it was read at (a seq is
  never given twice: `packs.newest_logged_seq`).
- Every other write that changes a turn's row or who may read it is logged in
  ``campaigns_turn_changes`` (migration 0039; tags and hinge since 0040), and the entry
  holds only while the viewer's count of the logged changes it may read stands. A write
  to turns the viewer reads neither before nor after leaves its entries alone, so a
  hidden write never makes its pack slower (`pack_cache`, issue 23).

As for the postings, entries are stored only from reads outside a transaction (committed
rows), and the loader uses neither cache while an import waits for its term rows.
Per process and bounded (`MAX_HITS`, least recently used out).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import connection

from campaigns.reads.packs import (
    TURN_COLUMNS,
    TURN_KIND,
    TURN_MONOLOGUE,
    TURN_ROUND,
    TURN_SEQ,
)
from campaigns.reads.postings_cache import Stamp
from campaigns.reads.precompiled import database_key, keep_bounded

MAX_HITS = 4096  # (experiment, viewer, neighbours, hit) entries, each a few rows

WIDTH = len(TURN_COLUMNS)


@dataclass(frozen=True)
class _Entry:
    changes: int
    last_seq: int | None  # None: appends cannot change it (every neighbour was found)
    row: tuple  # the hit's TURN_COLUMNS
    around: tuple[tuple, ...]  # its neighbours' and opening turn's rows, not its own


_lock = threading.Lock()
_entries: OrderedDict[tuple, _Entry] = OrderedDict()
stats = {"hits_held": 0, "hits_read": 0, "reads": 0}


def hit_rows(
    stamp: Stamp,
    hit_ids: Sequence[int],
    neighbours: int,
    read: Callable[[list[int]], list[tuple]],
) -> tuple[list[tuple], list[tuple]]:
    """What `search.hit_query` gives for ``hit_ids``, as `split` makes it: the readable
    hits' rows in the order asked, and each of their neighbours' and opening turns'
    rows that is not a hit, once (the kept rows themselves: a pack's views of them are
    found by identity, `adapters.turn_view_row`).

    ``read(ids)``: `search.hit_query`'s rows for ``ids`` (with ``neighbours``) — called
    once, for the hits this cache does not hold under ``stamp``, or not at all."""
    base = (database_key(), stamp.experiment_id, stamp.created_at, stamp.viewer, neighbours)
    wanted = list(dict.fromkeys(hit_ids))
    held: dict[int, _Entry] = {}
    missing: list[int] = []
    with _lock:
        for hit in wanted:
            entry = _entries.get((*base, hit))
            if (
                entry is not None
                and entry.changes == stamp.changes
                and (entry.last_seq is None or stamp.last_seq <= entry.last_seq)
            ):
                _entries.move_to_end((*base, hit))
                held[hit] = entry
            else:
                missing.append(hit)
        stats["hits_held"] += len(held)
        stats["hits_read"] += len(missing)
        stats["reads"] += bool(missing)
    if missing:
        fresh, whole = _entries_from(read(missing), stamp, neighbours)
        held.update(fresh)
        if not connection.in_atomic_block:
            with _lock:
                keep_bounded(_entries, {(*base, hit): fresh[hit] for hit in whole}, MAX_HITS)
    found = [held[hit] for hit in wanted if hit in held]
    hits = {entry.row[0] for entry in found}
    near: dict[int, tuple] = {}
    for entry in found:
        for row in entry.around:
            if row[0] not in hits:
                near.setdefault(row[0], row)
    return [entry.row for entry in found], list(near.values())


def split(rows: list[tuple], hit_ids: Sequence[int]) -> tuple[list[tuple], list[tuple]]:
    """`search.hit_query`'s rows as `hit_rows` gives them: the readable hits' rows (its
    ``TURN_COLUMNS``) in the order of ``hit_ids``, and the other rows."""
    by_id = {row[1]: row[1 : 1 + WIDTH] for row in rows if row[0]}
    near = [row[1 : 1 + WIDTH] for row in rows if not row[0]]
    return [by_id[hit] for hit in dict.fromkeys(hit_ids) if hit in by_id], near


def _entries_from(
    rows: list[tuple], stamp: Stamp, neighbours: int
) -> tuple[dict[int, _Entry], set[int]]:
    """Each readable hit's entry from a `search.hit_query` result, and the hits whose
    entries may be kept (all their neighbours' rows were read)."""
    by_id = {row[1]: row[1 : 1 + WIDTH] for row in rows}
    entries: dict[int, _Entry] = {}
    whole: set[int] = set()
    for row in rows:
        if not row[0]:
            continue
        hit, around_ids = row[1], row[1 + WIDTH :]
        named = [turn_id for turn_id in dict.fromkeys(around_ids) if turn_id not in (None, hit)]
        around = tuple(by_id[turn_id] for turn_id in named if turn_id in by_id)
        # Columns: before0, after0, before1, after1, …, opening.
        is_open = around_ids[-1] is None or None in around_ids[1 : 2 * neighbours : 2]
        entries[hit] = _Entry(
            changes=stamp.changes,
            last_seq=stamp.last_seq if is_open else None,
            row=by_id[hit],
            around=around,
        )
        if len(around) == len(named):
            whole.add(hit)
    return entries, whole


@dataclass(frozen=True)
class Window:
    """The pack's window rows (`window_cache`) as far as they hold every readable turn:
    each one with a seq from ``complete_from`` on (the window's Nth-newest transcript
    turn; 0: the whole readable history), and each one of the rounds from ``from_round``
    on (None: no such part)."""

    rows: Sequence[tuple]
    complete_from: int
    from_round: int | None


def window_hit_rows(
    window: Window, hit_ids: Sequence[int], neighbours: int
) -> tuple[list[tuple], list[int]]:
    """`search.hit_query`'s rows for the hits whose rows, neighbours and round opening
    the window holds, made from its rows; and the other hits, for the database.

    After a new turn, about two of a pack's ~5 new hits are recent turns the window has
    just read (the new turn among them). A hit is served here when it is a transcript
    turn (no monologue) from ``complete_from`` on, its ``neighbours`` earlier readable
    transcript turns are too (or it has fewer, and the window holds the whole history),
    and its round is among the window's whole rounds (or the whole history): what the
    statement would find walking the readable turns, found in the same rows. Later
    neighbours are always there: the window holds every readable turn after it. For a
    reader who is not a judge (the loader asks only then)."""
    transcript = [
        row
        for row in window.rows
        if row[TURN_KIND] != TURN_MONOLOGUE and row[TURN_SEQ] >= window.complete_from
    ]
    position = {row[0]: index for index, row in enumerate(transcript)}
    openings: dict[int, tuple] = {}  # round → its first readable transcript turn
    for row in window.rows:
        if row[TURN_KIND] != TURN_MONOLOGUE and row[TURN_ROUND] not in openings:
            openings[row[TURN_ROUND]] = row
    served: list[tuple] = []
    rest: list[int] = []
    named: dict[int, tuple] = {}
    for hit in hit_ids:
        index = position.get(hit)
        if index is None:
            rest.append(hit)
            continue
        row = transcript[index]
        whole_round = window.complete_from == 0 or (
            window.from_round is not None and row[TURN_ROUND] >= window.from_round
        )
        if not whole_round or (index < neighbours and window.complete_from != 0):
            rest.append(hit)
            continue
        around: list[int | None] = []
        for k in range(neighbours):
            before = transcript[index - 1 - k] if index - 1 - k >= 0 else None
            after = transcript[index + 1 + k] if index + 1 + k < len(transcript) else None
            around += [None if before is None else before[0], None if after is None else after[0]]
            named.update((near[0], near) for near in (before, after) if near is not None)
        opening = openings[row[TURN_ROUND]]
        named[opening[0]] = opening
        served.append((1, *row, *around, opening[0]))
    padding = (None,) * (2 * neighbours + 1)
    served += [(0, *row, *padding) for row in named.values()]
    return served, rest


def clear() -> None:
    """Forget every hit (tests, benchmarks)."""
    with _lock:
        _entries.clear()
        for name in stats:
            stats[name] = 0
