"""Round trip 2 of a pack's reads (`context.pack_input_for_role`) and what goes ahead
with round trip 1 on PostgreSQL: its statements (`second_reads`), made from the role's
last pack's inputs (`ahead`), and the new matches of that pack's held query words
(`Held`, `covered_by_held`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connection

from campaigns.reads import packs, postings_cache, search, window_cache
from campaigns.reads.precompiled import Query, keep_bounded
from campaigns.reads.search import ALL_SEQS
from campaigns.reads.selectors import Viewer
from campaigns.services.memory.retrieval import PINS_READ
from context_engine.types import HistoryNeeds
from context_engine.visibility import audience_key

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class SecondInputs:
    """What round trip 2's statements are made of (`second_reads`)."""

    experiment_id: int
    role: str
    viewer: Viewer
    needs: HistoryNeeds
    backlog: bool
    created_at: Any
    last_seq: int


@dataclass(frozen=True)
class SecondReads:
    inputs: SecondInputs
    window_read: window_cache.WindowRead
    queries: list[Query | None]


def second_reads(inputs: SecondInputs) -> SecondReads:
    """Round trip 2's statements: the caches' stamp first (on SQLite every later read is
    then at least as new as it), the window, own monologues, whisper stubs, pins, lore,
    and the newest digest and strategic summary.

    The newest seq (``inputs.last_seq``) only chooses how the window is read (the turns
    appended since the kept window, or all of it), and either read is right whatever the
    newest seq then is (`window_cache.finish` checks the appended read against it): so
    statements made from inputs that differ only in it are right for both (`ahead`)."""
    experiment_id, viewer, needs = inputs.experiment_id, inputs.viewer, inputs.needs
    window_read = _window_read(
        experiment_id, viewer, needs, inputs.backlog, inputs.created_at, inputs.last_seq
    )
    queries = [
        # The caches' stamp (none while an import waits for its term rows).
        None
        if inputs.backlog
        else packs.turn_change_count_query(experiment_id=experiment_id, viewer=viewer),
        window_read.query,
        _monologue_query(experiment_id, viewer, inputs.role, needs),
        packs.whisper_stub_query(
            experiment_id=experiment_id,
            viewer=viewer,
            from_round=needs.from_round,
            last_turns=needs.last_turns,
            full=needs.full,
        )
        if needs.unreadable_whispers and not viewer.omniscient
        else None,
        packs.pin_id_query(experiment_id=experiment_id, role=inputs.role, count=PINS_READ),
        packs.lore_query(experiment_id=experiment_id, viewer=viewer),
        packs.newest_summary_query(
            experiment_id=experiment_id, viewer=viewer, own_key=audience_key((inputs.role,))
        ),
    ]
    return SecondReads(inputs, window_read, queries)


# Round trip 2 sent ahead (PostgreSQL). Its statements are made from what round trip 1
# reads (the viewer, from the participants; what the window holds, from the config, the
# round and the events; whether an import waits), yet between two packs of one role that
# is nearly always the same, the newest seq aside (`second_reads`). So round trip 1 also
# carries round trip 2 as made from the inputs of the role's last pack, and its rows are
# used only when this pack's inputs are the same, or when the statements this pack makes
# are the same (a new round: the window's bounds moved, but its read of the appended
# turns did not); else they are dropped unused and round trip 2 runs as before. What is
# sent ahead reads as the role's last pack's viewer did, and both round trips then read
# one snapshot (one statement). A round trip waits for the server's process to wake:
# measured here, a `SELECT 1` after 3 ms of the client's own work takes ~0.7-1.0 ms
# against ~0.2 ms back to back, so one fewer is worth more than a statement's own time.
MAX_AHEAD = 1024  # (database, experiment, role) entries
_lock = threading.Lock()


@dataclass(frozen=True)
class _Last:
    """A role's last pack: round trip 2's inputs and its query's words."""

    inputs: SecondInputs
    words: tuple[str, ...]


@dataclass(frozen=True)
class Held:
    """The postings past the seq this process holds them to, for the role's last query's
    words, sent with round trip 1: after a new turn a pack reads the same words' new
    matches, and often no other word (its input and three of its four context turns are
    the last pack's). Used only with round trip 2's rows (one snapshot, the same reader);
    words it does not cover are read as before (`context._ranked_retrieval`)."""

    words: tuple[str, ...]
    since: tuple[int, ...]
    query: Query

    def postings(self, rows: list[tuple]) -> dict[str, tuple[int, np.ndarray]]:
        by_word = search.postings_by_word(list(self.words), rows)
        return {w: (after, by_word[w]) for w, after in zip(self.words, self.since, strict=True)}


_last_packs: OrderedDict[tuple, _Last] = OrderedDict()


def ahead(experiment_id: int, role: str) -> tuple[tuple | None, SecondReads | None, Held | None]:
    """The key to keep this pack's inputs under, round trip 2 made from the role's last
    pack's inputs, and the postings held for its query's words (None on SQLite, which
    has no round trips to save, or without a last pack)."""
    if connection.vendor != "postgresql":
        return None, None, None
    key = (postings_cache.database_key(), experiment_id, role)
    with _lock:
        last = _last_packs.get(key)
    if last is None:
        return key, None, None
    inputs, held = last.inputs, None
    if last.words and not inputs.backlog:
        since = postings_cache.held_since(
            experiment_id=experiment_id,
            created_at=inputs.created_at,
            viewer=inputs.viewer,
            words=last.words,
        )
        # Only words whose postings are held: their new matches are a few rows, where a
        # word's whole read (up to DF_CAP rows, in the batch as JSON) may go unused.
        pairs = [
            (word, after)
            for word, after in zip(last.words, since, strict=True)
            if after != ALL_SEQS
        ]
        if pairs:
            words, after = tuple(word for word, _ in pairs), tuple(a for _, a in pairs)
            query = search.postings_query(
                experiment_id=experiment_id,
                viewer=inputs.viewer,
                words=list(words),
                backlog=False,
                since=list(after),
            )
            held = Held(words, after, query)
    return key, second_reads(inputs), held


def clear_ahead() -> None:
    """Forget every role's last inputs (tests, benchmarks)."""
    with _lock:
        _last_packs.clear()


def remember(key: tuple, inputs: SecondInputs, words: tuple[str, ...]) -> None:
    """Keep a role's pack's inputs and query words for its next pack (`ahead`)."""
    with _lock:
        keep_bounded(_last_packs, {key: _Last(inputs, words)}, MAX_AHEAD)


def _window_read(experiment_id: int, viewer: Viewer, needs, backlog: bool, created_at, last_seq):
    """The window's read (`window_cache`), or everything for ``full_history``."""
    if needs.full:
        everything = packs.all_turn_query(experiment_id=experiment_id, viewer=viewer)
        return window_cache.WindowRead(query=everything, full=everything)
    if backlog:  # no stamp: read in full, keep nothing
        return window_cache.window_read(experiment_id=experiment_id, viewer=viewer, needs=needs)
    return window_cache.window_read(
        experiment_id=experiment_id,
        viewer=viewer,
        needs=needs,
        created_at=created_at,
        last_seq=last_seq,
    )


def covered_by_held(
    held: dict[str, tuple[int, np.ndarray]], wanted: list[str], since: list[int]
) -> tuple[dict[str, np.ndarray], list[str], list[int]]:
    """The postings ``held`` gives for ``wanted`` words past their ``since`` seqs, and
    the words (with their seqs) it does not cover. ``held``: per word, the seq a read
    went past and its rows (`Held.postings`). A read past an older or the same seq
    holds the word's matches past ``since``: the newest of them, at most DF_CAP, as a
    read past ``since`` would give (the rows past ``since`` are the newest ones)."""
    found: dict[str, np.ndarray] = {}
    rest_words: list[str] = []
    rest_since: list[int] = []
    for word, after in zip(wanted, since, strict=True):
        sent = held.get(word)
        if sent is not None and sent[0] <= after:
            rows = sent[1]
            found[word] = rows[rows[:, 1] > after]
        else:
            rest_words.append(word)
            rest_since.append(after)
    return found, rest_words, rest_since


def _monologue_query(experiment_id: int, viewer: Viewer, role: str, needs) -> Query | None:
    """The role's own newest monologues (none for ``full_history``: it reads them all)."""
    if needs.full or not needs.monologue_count:
        return None
    return packs.own_monologue_query(
        experiment_id=experiment_id, viewer=viewer, speaker=role, count=needs.monologue_count
    )
