"""A per-process cache of built packs, keyed by everything the pack is built from.

A pack is a pure function of its `PackInput` — what the loader read for one role: the
turns, lore, digests, events, clock and config *that role* may read. The key is that
input itself (with the experiment and the role), so no write can leave a stale entry
and nothing is ever invalidated by hand: a write that changes what the role reads
changes the input, and the old entry is simply never asked for again (LRU-evicted).

The key must depend only on what the role can read (issue 23, finding 5). A stamp of
the whole experiment (`Experiment.pack_version`, changed by every write) made a
player's own pack rebuild — measurably slower — after a GM note or a whisper between
others, which told them a hidden write had happened. Keyed by the input, a hidden
write costs the player's pack nothing but the load every call already pays.

Per process, so every worker (gunicorn, Celery) and every caller of `pack_for_role` —
the API, the console's context meters, the relay — shares it without a network hop.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from context_engine.types import Pack, PackInput

MAX_ENTRIES = 1024


class _Key:
    """A key that hashes its value once: an input holds hundreds of turns, and hashing
    them is a tenth of a pack cache hit (a tuple's hash is not kept, and a lookup, a
    store and the LRU's reordering would each hash it again)."""

    __slots__ = ("hash", "value")

    def __init__(self, value: tuple):
        self.value = value
        self.hash = hash(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.hash == other.hash and self.value == other.value


_lock = threading.Lock()
_entries: OrderedDict[_Key, Pack] = OrderedDict()
stats = {"hits": 0, "misses": 0}


def get_or_build(
    *, experiment_id: int, pack_input: PackInput, build: Callable[[PackInput], Pack]
) -> Pack:
    """The cached pack for this input, or ``build(pack_input)`` stored under it."""
    try:
        key = _Key((experiment_id, pack_input.role, pack_input))
    except TypeError:  # pragma: no cover - an unhashable input: build, never guess a key
        return build(pack_input)
    with _lock:
        pack = _entries.get(key)
        if pack is not None:
            _entries.move_to_end(key)
            stats["hits"] += 1
            return pack
    pack = build(pack_input)
    with _lock:
        stats["misses"] += 1
        _entries[key] = pack
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    return pack


def clear() -> None:
    """Forget every cached pack (tests, benchmarks)."""
    with _lock:
        _entries.clear()
        stats.update(hits=0, misses=0)
