"""Model vetting of World Bible proposals (issue 10): keep, category, definition.

The offline rules propose; when a model is configured, a checkpoint sends a batch of
new proposals, each with the sentences it was first used in, and the model answers per
proposal ``{id, term, keep, category, definition}``.

One audience per prompt (issue 23): every proposal of a call belongs to the same
audience, and the caller passes only sentences that audience may read, so a model that
blends what it was shown can only blend text its readers already have. A verdict applies
to the proposal it names by ``id`` and only when it also names that proposal's term:
never to another entry that shares the term (a GM-only "Maelis Orrow" and the public one
are two entries with two answers). Any failure (no model, timeout, bad JSON, a proposal
the model skipped or misnamed) leaves that proposal exactly as the rules made it:
offline stays the default and the fallback.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from context_engine.llm.base import LLMClient, call_with_retries, is_offline
from context_engine.memory._text import clip_words, first_sentence, squash

CATEGORIES = ("npc", "location", "artifact", "faction", "term")
VET_SCHEMA = {
    "type": "object",
    "properties": {
        "terms": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "term": {"type": "string"},
                    "keep": {"type": "boolean"},
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                    "definition": {"type": "string"},
                },
                "required": ["id", "term", "keep", "category", "definition"],
            },
        }
    },
    "required": ["terms"],
}
_SYSTEM = (
    "You keep the World Bible of a tabletop role-playing campaign. Each proposed term "
    "comes on its own line as '- [ID] TERM (guessed CATEGORY): first uses'. For each, "
    "decide whether it is campaign lore (a character, place, item, faction or coined term "
    "of the fiction) or table talk (players chatting, rules words, real-world brands, "
    "sentence fragments). Answer once per line with its id and term, keep, its category "
    "(npc, location, artifact, faction or term) and a one-sentence definition using only "
    "the sentences given on that line."
)


class MixedAudiences(ValueError):
    """One vetting prompt may carry one audience's proposals only."""


@dataclass(frozen=True)
class Proposal:
    id: int  # the entry's id: a verdict applies to this entry and no other
    term: str
    category: str
    sentences: tuple[str, ...]
    audience: str = "*"  # the entry's audience key; one per prompt


@dataclass(frozen=True)
class Verdict:
    id: int
    term: str
    keep: bool
    category: str
    definition: str


def vet_messages(proposals: Sequence[Proposal]) -> list[dict[str, str]]:
    """The prompt for one audience's proposals (MixedAudiences if they are not)."""
    audiences = {p.audience for p in proposals}
    if len(audiences) > 1:
        raise MixedAudiences(f"one audience per vetting prompt, got {sorted(audiences)}")
    lines = []
    for proposal in proposals:
        quoted = " | ".join(squash(s) for s in proposal.sentences[:3])
        term = squash(proposal.term)
        lines.append(f"- [{proposal.id}] {term} (guessed {proposal.category}): {quoted}")
    return [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": "Proposed terms and their first uses:\n" + "\n".join(lines)},
    ]


def _same_term(a: str, b: str) -> bool:
    return squash(a).casefold() == squash(b).casefold()


def _verdict_room(count: int) -> int:
    """Output tokens for ``count`` verdicts: id, term, keep, category and a short
    definition each (about 80 tokens as JSON), and the object around them."""
    return 128 + 80 * count


def vet_proposals(
    proposals: Sequence[Proposal],
    *,
    client: LLMClient | None,
    attempts: int = 2,
    sleep: Callable[[float], None] = time.sleep,
    max_words: int = 40,
) -> dict[int, Verdict] | None:
    """Verdicts by proposal id for the proposals the model answered ({} when it answered
    none); None offline or when the model failed. All ``proposals`` must share one
    audience (`MixedAudiences` otherwise, before anything is sent)."""
    messages = vet_messages(proposals)
    if not proposals or client is None or is_offline(client):
        return None
    try:
        data = call_with_retries(
            lambda: client.complete_json(
                messages, schema=VET_SCHEMA, max_output_tokens=_verdict_room(len(proposals))
            ),
            attempts=attempts,
            sleep=sleep,
        )
    except Exception:  # any model failure: the rules' proposals stand
        return None
    asked = {p.id: p for p in proposals}
    verdicts: dict[int, Verdict] = {}
    items = data.get("terms") if isinstance(data, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        answered_id = item.get("id")
        if isinstance(answered_id, bool) or not isinstance(answered_id, (int, str)):
            continue
        try:
            proposal = asked.get(int(answered_id))
        except ValueError:
            continue
        keep = item.get("keep")
        if proposal is None or not isinstance(keep, bool) or proposal.id in verdicts:
            continue  # unknown id, no decision, or a second answer for the same entry
        if not _same_term(str(item.get("term", "")), proposal.term):
            continue  # the id and the term disagree: it is not clear what was answered
        category = str(item.get("category", "")).lower()
        definition = clip_words(first_sentence(str(item.get("definition") or "")), max_words)
        verdicts[proposal.id] = Verdict(
            id=proposal.id,
            term=proposal.term,
            keep=keep,
            category=category if category in CATEGORIES else proposal.category,
            definition=definition,
        )
    return verdicts
