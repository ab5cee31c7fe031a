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

from campaigns.reads.packs import TURN_COLUMNS
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
) -> list[tuple]:
    """The rows `search.hit_query` gives for ``hit_ids``, without its id columns:
    ``(1, *turn)`` for each readable hit, then ``(0, *turn)`` for each of their
    neighbours and opening turns that is not a hit.

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
    found = [hit for hit in wanted if hit in held]
    rows = [(1, *held[hit].row) for hit in found]
    hits = set(found)
    near: dict[int, tuple] = {}
    for hit in found:
        for row in held[hit].around:
            if row[0] not in hits:
                near.setdefault(row[0], row)
    rows.extend((0, *row) for row in near.values())
    return rows


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


def clear() -> None:
    """Forget every hit (tests, benchmarks)."""
    with _lock:
        _entries.clear()
        for name in stats:
            stats[name] = 0
