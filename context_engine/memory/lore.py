"""Lore entries without leaks (SPEC §4): an entry's audience and the text it may use.

An entry derived from several turns may be read only by those who can read *all* of
them: its audience is the intersection of the sources' audiences. Its definition must
then be built only from turns every member of that audience can read, so nothing a
reader could not see themselves is ever paraphrased to them. Both rules live here, next
to each other, so the hydrator cannot apply one without the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from context_engine.llm.base import LLMClient
from context_engine.memory.extraction import (
    define_term_with_method,
    mentions,
    sentences_mentioning,
)
from context_engine.memory.vocabulary import guess_category
from context_engine.types import TurnView
from context_engine.visibility import NOBODY, Visibility, intersect

_UNSET: object = object()


def lore_audience(sources: Iterable[TurnView]) -> Visibility:
    """Intersection of the sources' visibilities; ``()`` (nobody) when there are none.

    Fails closed: ``intersect([])`` would be public, which is wrong for an entry with no
    known source.
    """
    visibilities = [turn.visibility for turn in sources]
    if not visibilities:
        return NOBODY
    return intersect(visibilities)


def readable_by_audience(visibility: Visibility, audience: Visibility) -> bool:
    """Can every reader of ``audience`` read an item with ``visibility``?

    Public items are readable by all; a public audience may use only public items; a
    role list may use items visible to each of its roles. ``()`` has no agent readers,
    so anything qualifies (only judges and the owner will see it).
    """
    if visibility is None:
        return True
    if audience is None:
        return False
    return set(audience) <= set(visibility)


def usable_sources(sources: Iterable[TurnView], audience: Visibility) -> list[TurnView]:
    """The sources an artifact for ``audience`` may draw on, in story order."""
    return sorted(
        (t for t in sources if readable_by_audience(t.visibility, audience)),
        key=lambda t: (t.seq, t.id),
    )


@dataclass(frozen=True)
class TermDefinition:
    """What the hydrator stores for a term: text, audience and provenance."""

    term: str
    category: str
    definition: str
    audience: Visibility
    source_turn_ids: tuple[int, ...]
    method: str  # llm | first_use
    first_seen_round: int
    last_seen_round: int
    mention_count: int


def define_from_sources(
    term: str,
    sources: Sequence[TurnView],
    *,
    client: LLMClient | None,
    audience: Visibility | object = _UNSET,
    category: str | None = None,
    attempts: int = 2,
    sleep: Callable[[float], None] = time.sleep,
) -> TermDefinition | None:
    """Define ``term`` for ``audience`` (default: the intersection of ``sources``).

    Only sources readable by the whole audience and mentioning the term are used, both
    for the definition and as provenance. None when no such source mentions the term.
    """
    target: Visibility = lore_audience(sources) if audience is _UNSET else audience  # type: ignore[assignment]
    used = [t for t in usable_sources(sources, target) if mentions(term, t.content)]
    if not used:
        return None
    usage = [sentence for turn in used for sentence in sentences_mentioning(term, turn.content)]
    definition, method = define_term_with_method(
        term, usage, client=client, attempts=attempts, sleep=sleep
    )
    return TermDefinition(
        term=term,
        category=category or guess_category(term, usage[0] if usage else ""),
        definition=definition,
        audience=target,
        source_turn_ids=tuple(t.id for t in used),
        method=method,
        first_seen_round=min(t.round for t in used),
        last_seen_round=max(t.round for t in used),
        mention_count=len(used),
    )
