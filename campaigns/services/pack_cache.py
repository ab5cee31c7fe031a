"""A per-process cache of built packs, keyed so that no write can leave a stale one.

A pack is a pure function of what the loader reads. The key holds the experiment, the
role, the input, and a stamp read in one indexed query before every lookup:
`Experiment.pack_version` (a fresh random value after *every* write to turns, lore,
summaries, participants, the world state, context events, visibility changes or the
experiment's own hook/rules/config/clock — kept by database triggers, see migration
0009, so the admin, `QuerySet.update()` and bulk inserts are covered too), and, spelled
out, the campaign clock (`current_round`), the newest turn seq, the config and the
newest digest id. Nothing is ever invalidated by hand: a write changes
the stamp and the old entry is simply never asked for again (LRU-evicted).

Per process, so every worker (gunicorn, Celery) and every caller of `pack_for_role` —
the API, the console's context meters, the relay — shares it without a network hop; the
database stamp makes it correct across processes.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from django.db.models import OuterRef, Subquery

from campaigns.models import Experiment, Summary, Turn
from campaigns.reads.precompiled import compile_once
from context_engine.types import Pack

MAX_ENTRIES = 1024

_lock = threading.Lock()
_entries: OrderedDict[tuple, Pack] = OrderedDict()
stats = {"hits": 0, "misses": 0}


def _newest(model, field: str):
    """Newest ``field`` of the experiment's rows: one index seek (not an aggregate scan)."""
    return Subquery(
        model.objects.filter(experiment_id=OuterRef("pk")).order_by(f"-{field}").values(field)[:1]
    )


def stamp(experiment_id: int) -> tuple | None:
    """What a pack of this experiment depends on, in one query (None: no experiment)."""

    def build(slots):
        return (
            Experiment.objects.filter(pk=slots.int("experiment"))
            .annotate(
                last_seq=_newest(Turn, "seq"),
                last_summary=_newest(Summary, "id"),
            )
            .order_by()
            .values_list(
                "pack_version", "current_round", "config", "last_seq", "last_summary",
            )
        )  # fmt: skip

    rows = compile_once(("pack-stamp",), build).rows(experiment=experiment_id)
    return tuple(str(value) for value in rows[0]) if rows else None


def get_or_build(
    *,
    experiment_id: int,
    role: str,
    input_text: str,
    build: Callable[[], Pack],
    variant: Hashable = None,
) -> Pack:
    """The cached pack for this key, or ``build()`` stored under it. ``variant``: what
    else the pack depends on that no database write changes (the model window, which
    its server may change)."""
    current = stamp(experiment_id)
    if current is None:  # let the loader raise its usual error
        return build()
    digest = hashlib.sha256(input_text.encode("utf-8", "surrogatepass")).hexdigest()
    key = (experiment_id, role, digest, current, variant)
    with _lock:
        pack = _entries.get(key)
        if pack is not None:
            _entries.move_to_end(key)
            stats["hits"] += 1
            return pack
    pack = build()
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
