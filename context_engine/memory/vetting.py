"""Model vetting of World Bible proposals (issue 10): keep, category, definition.

The offline rules propose; when a model is configured, a checkpoint sends the batch of
new proposals, each with the sentences it was first used in, and the model answers per
term ``{keep, category, definition}``. The caller passes only sentences the entry's
audience may read. Any failure (no model, timeout, bad JSON, a term the model skipped)
leaves that proposal exactly as the rules made it: offline stays the default and the
fallback.
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
                    "term": {"type": "string"},
                    "keep": {"type": "boolean"},
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                    "definition": {"type": "string"},
                },
                "required": ["term", "keep", "category", "definition"],
            },
        }
    },
    "required": ["terms"],
}
_SYSTEM = (
    "You keep the World Bible of a tabletop role-playing campaign. For each proposed term, "
    "decide whether it is campaign lore (a character, place, item, faction or coined term "
    "of the fiction) or table talk (players chatting, rules words, real-world brands, "
    "sentence fragments). Answer with keep, its category (npc, location, artifact, faction "
    "or term) and a one-sentence definition using only the sentences given."
)


@dataclass(frozen=True)
class Proposal:
    term: str
    category: str
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    term: str
    keep: bool
    category: str
    definition: str


def vet_proposals(
    proposals: Sequence[Proposal],
    *,
    client: LLMClient | None,
    attempts: int = 2,
    sleep: Callable[[float], None] = time.sleep,
    max_words: int = 40,
) -> dict[str, Verdict] | None:
    """Verdicts by term for the proposals the model answered ({} when it answered none);
    None offline or when the model failed."""
    if not proposals or client is None or is_offline(client):
        return None
    lines = []
    for proposal in proposals:
        quoted = " | ".join(squash(s) for s in proposal.sentences[:3])
        lines.append(f"- {proposal.term} (guessed {proposal.category}): {quoted}")
    messages = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": "Proposed terms and their first uses:\n" + "\n".join(lines)},
    ]
    try:
        data = call_with_retries(
            lambda: client.complete_json(messages, schema=VET_SCHEMA),
            attempts=attempts,
            sleep=sleep,
        )
    except Exception:  # any model failure: the rules' proposals stand
        return None
    asked = {p.term.casefold(): p for p in proposals}
    verdicts: dict[str, Verdict] = {}
    for item in data.get("terms") or []:
        if not isinstance(item, dict):
            continue
        proposal = asked.get(str(item.get("term", "")).casefold())
        keep = item.get("keep")
        if proposal is None or not isinstance(keep, bool):
            continue
        category = str(item.get("category", "")).lower()
        definition = clip_words(first_sentence(str(item.get("definition") or "")), max_words)
        verdicts[proposal.term] = Verdict(
            term=proposal.term,
            keep=keep,
            category=category if category in CATEGORIES else proposal.category,
            definition=definition,
        )
    return verdicts
