"""Each query word's postings, kept per process between one viewer's packs (SPEC §5.8).

A pack's ranked retrieval reads, for every query word, its newest `ranking.DF_CAP`
readable matches (`search.postings_query`): at 50,000 turns about 1,300 rows a pack,
most of them the same as the previous pack's, since between two packs the history mostly
grows by appended turns. This cache keeps a word's rows per (database, experiment,
viewer, word) and reads only the matches past the newest seq it has seen (``since``):
one statement for every word the pack needs — none when no turn was appended since.

Exact, not approximate: the rows it gives are the ones `search.postings_query` would
read at that moment. Appended turns take the experiment's next seq (under its row lock,
`turns.turn_create`), so the matches past the seq a word was read at are all its new
ones, and a word's newest ``DF_CAP`` are the newest of those followed by the kept ones.
Every other write that can change a word's older matches — an edit, a delete, a
visibility or hold change, an insert below the newest seq — logs the turn's versions in
``campaigns_turn_changes`` (triggers, migration 0039), and the viewer's *stamp* is how
many of those rows it may read (`packs.turn_change_count_query`). An entry is used only
under the stamp it was read with. A change to a turn the viewer can read neither before
nor after cannot change its postings and does not move its stamp: a hidden write costs
the viewer's next pack nothing, so the pack's timing tells it nothing (`pack_cache`,
issue 23).

Entries are stored only from reads outside any transaction (autocommit: committed rows
only), so a rolled-back write can never leave rows behind; a read inside a transaction
still uses them (its own appends come past the seq; its own changes move its stamp).
Nothing is stored while the experiment's import waits for its term rows (`SearchBacklog`).
Keyed by the experiment's creation time too: ids a test database reuses are other
experiments. Per process and bounded (`MAX_WORDS`, least recently used out).

It also keeps each ranking made under a stamp (`ranked`: the best turns' ids for a
query): the same stamp gives the same postings, so the same ranking, and a pack built
again with nothing appended and nothing the viewer reads changed ranks nothing again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from django.db import connection

from campaigns.reads.precompiled import database_key, keep_bounded
from campaigns.reads.search import ALL_SEQS
from campaigns.reads.selectors import Viewer
from context_engine.ranking import DF_CAP, NO_POSTINGS, Query

MAX_WORDS = 2048  # (experiment, viewer, word) entries, each at most DF_CAP postings
MAX_RANKINGS = 1024  # (experiment, viewer, stamp, query) rankings, each a few ids

# A word's postings: rows (turn id, seq, tokens, speaker code), newest first
# (`search.postings_by_word`).
Postings = np.ndarray


@dataclass(frozen=True)
class Stamp:
    """What an entry is valid for: the experiment (and its creation, against reused
    ids), the viewer, how many logged changes the viewer may read, and the experiment's
    newest seq when the pack began (the postings past it are read)."""

    experiment_id: int
    created_at: datetime
    viewer: Viewer
    changes: int
    last_seq: int


@dataclass(frozen=True)
class _Entry:
    changes: int
    last_seq: int  # every posting held has a seq at or below this
    postings: Postings  # read-only


_lock = threading.Lock()
_entries: OrderedDict[tuple, _Entry] = OrderedDict()
_rankings: OrderedDict[tuple, tuple[int, ...]] = OrderedDict()
stats = {"words_held": 0, "words_read": 0, "reads": 0, "rankings_held": 0}


def postings(
    stamp: Stamp,
    words: Sequence[str],
    read: Callable[[list[str], list[int]], dict[str, Postings]],
) -> dict[str, Postings]:
    """Each word's newest readable postings, as ``read`` would give them all.

    ``read(words, since)``: the words' postings past each ``since`` seq (`ALL_SEQS`:
    all), newest first, at most ``DF_CAP`` each — one statement. Called once, for the
    words this cache does not hold up to ``stamp.last_seq``, or not at all. (The loader
    gives no stamp, and reads without the cache, while an import's turns wait for their
    term rows.)"""
    return _postings(stamp, words, read)[0]


def held_since(
    *, experiment_id: int, created_at: datetime, viewer: Viewer, words: Sequence[str]
) -> list[int]:
    """Per word, the seq its held postings reach (`ALL_SEQS`: none held): what `postings`
    would read past, were the viewer's stamp still the one they were read under."""
    base = (database_key(), experiment_id, created_at, viewer)
    with _lock:
        entries = [_entries.get((*base, word)) for word in words]
    return [ALL_SEQS if entry is None else entry.last_seq for entry in entries]


def ranked(
    stamp: Stamp,
    query: Query,
    limit: int,
    read: Callable[[list[str], list[int]], dict[str, Postings]],
    rank: Callable[[dict[str, Postings]], list[int]],
) -> list[int]:
    """``rank(postings(stamp, query.words, read))``: the ids of the ``limit`` best turns
    for ``query``, kept per stamp. Under one stamp a word's postings are the same
    (`postings`), so its ranking is too: a pack built again with nothing appended and
    nothing the viewer reads changed (a pack cache hit builds its input too) ranks
    nothing and reads nothing. Kept only when no posting is past the stamp's newest seq
    (a turn appended while the pack read), and only outside transactions."""
    key = (database_key(), *_stamp_key(stamp), query, limit)
    with _lock:
        ids = _rankings.get(key)
        if ids is not None:
            _rankings.move_to_end(key)
            stats["rankings_held"] += 1
            return list(ids)
    found, settled = _postings(stamp, query.words, read)
    ids = rank(found)
    if settled and not connection.in_atomic_block:
        with _lock:
            keep_bounded(_rankings, {key: tuple(ids)}, MAX_RANKINGS)
    return ids


def _stamp_key(stamp: Stamp) -> tuple:
    return (stamp.experiment_id, stamp.created_at, stamp.viewer, stamp.changes, stamp.last_seq)


def _postings(
    stamp: Stamp,
    words: Sequence[str],
    read: Callable[[list[str], list[int]], dict[str, Postings]],
) -> tuple[dict[str, Postings], bool]:
    """`postings`, and whether none of them is past ``stamp.last_seq``."""
    base = (database_key(), stamp.experiment_id, stamp.created_at, stamp.viewer)
    found: dict[str, Postings] = {}
    held: dict[str, _Entry] = {}
    wanted: list[str] = []
    since: list[int] = []
    settled = True  # no posting past stamp.last_seq (a later pack's entry can hold one)
    with _lock:
        for word in dict.fromkeys(words):
            entry = _entries.get((*base, word))
            if entry is not None and entry.changes == stamp.changes:
                _entries.move_to_end((*base, word))
                if entry.last_seq >= stamp.last_seq:
                    found[word] = entry.postings
                    settled = settled and not (
                        len(entry.postings) and entry.postings[0, 1] > stamp.last_seq
                    )
                    continue
                held[word] = entry
                since.append(entry.last_seq)
            else:
                since.append(ALL_SEQS)
            wanted.append(word)
        stats["words_held"] += len(found)
        stats["words_read"] += len(wanted)
        stats["reads"] += bool(wanted)
    if not wanted:
        return found, settled
    fresh = read(wanted, since)
    keep = not connection.in_atomic_block
    kept: dict[tuple, _Entry] = {}
    for word in wanted:
        new = fresh.get(word, NO_POSTINGS)
        entry = held.get(word)
        rows = new if entry is None else _joined(new, entry.postings)
        found[word] = rows
        # Newest first: only the first few can be past the pack's newest seq (matches
        # appended since the pack began). They are not kept: read again, past it, next time.
        past = int(np.count_nonzero(rows[:, 1] > stamp.last_seq))
        settled = settled and not past
        if keep:
            kept[(*base, word)] = _Entry(stamp.changes, stamp.last_seq, _own(rows[past:]))
    if kept:
        with _lock:
            keep_bounded(_entries, kept, MAX_WORDS)
    return found, settled


def _joined(new: Postings, held: Postings) -> Postings:
    """A word's newest ``DF_CAP`` postings: the ``new`` ones (past the held ones' seq),
    then the held ones, read-only."""
    if not len(new):
        return held
    rows = np.concatenate((new, held))[:DF_CAP]
    rows.flags.writeable = False
    return rows


def _own(rows: Postings) -> Postings:
    """A read-only copy: a slice of a pack's read would keep the whole read's array."""
    rows = rows.copy()
    rows.flags.writeable = False
    return rows


def clear() -> None:
    """Forget every word's postings and every ranking (tests, benchmarks)."""
    with _lock:
        _entries.clear()
        _rankings.clear()
        for name in stats:
            stats[name] = 0
