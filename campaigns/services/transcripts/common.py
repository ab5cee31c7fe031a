"""The transcript format's name and the keys each element may have."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError

from campaigns.models import LORE_FIELDS

FORMAT = "babel-transcript/1"
TOP_KEYS = {"format", "experiment", "participants", "turns", "lore", "facts", "questions"}
EXPERIMENT_KEYS = {"name", "hook", "rules", "config", "status"}
PARTICIPANT_KEYS = {"role", "kind", "model", "bio", "identity", "secret", "reveal_round", "order"}
TURN_KEYS = {
    "key",
    "round",
    "speaker",
    "kind",
    "content",
    "visibility",
    "tags",
    "hinge",
    "needs_review",
}
MAX_TURN_KEY = 64
LORE_KEYS = {*LORE_FIELDS, "source_turns"}
LORE_INT_KEYS = ("first_seen_round", "last_seen_round", "mention_count")
LORE_OPTIONAL_INT_KEYS = ("valid_from_round", "invalid_from_round")


def reject_unknown(item: dict, allowed: set[str], prefix: str) -> None:
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise ValidationError({f"{prefix}{key}": ["Unknown field."] for key in unknown})


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector held off while an import builds (or parses) its objects.

    A transcript is hundreds of thousands of fresh dicts, lists and tuples, none of them
    in a cycle; each 700 allocations the collector would look at them, and every so
    often at the whole process (a third of a 7 MB parse). It runs again on leaving,
    unless it was already off. Process-wide: another thread's garbage waits as long.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
