"""The cold layer (SPEC §5.4): a rolling digest per audience, by model or offline.

The digest is the memory contract: once turns leave the hot window, the digest is all
an agent keeps of them. So a model's digest is validated (four headings, length cap),
hinges it forgot are put back, a heading it left out or empty is filled from the
offline digest (``method="repaired"``), and on any failure that cannot be repaired
(bad JSON, timeout, no heading at all, over the cap) the offline digest takes over.

The offline digest (`template.build_sections`) keeps every hinge, faction standing and
open thread its tags give, plus the covered rounds' most informative sentences (Key
Facts, `extractive`), so it is never empty for a history with content.

Callers pass only turns the audience can read (the Django selector decides that); the
digest never adds text from anywhere else. Offline, the offline digest *is* the digest:
it is returned with ``method="fallback"`` and ``model="offline"``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from context_engine.llm.base import (
    InvalidOutputError,
    LLMClient,
    call_with_retries,
    is_offline,
)
from context_engine.memory._text import squash
from context_engine.memory.milestones import detect_milestones
from context_engine.memory.monologues import condense_monologues
from context_engine.memory.template import (
    NONE_LINE,
    build_sections,
    hinge_lines_for,
    minimal_sections,
    parse_digest,
    previous_sections,
    render_digest,
)
from context_engine.tokens import count, truncate
from context_engine.types import DIGEST_HEADINGS, DigestView, TurnView

log = logging.getLogger(__name__)

FALLBACK_MODEL = "template"
OFFLINE_MODEL = "offline"
DIGEST_KEYS = dict(
    zip(
        DIGEST_HEADINGS,
        ("hinge_index", "standing_reasons", "npc_memory_anchors", "open_threads"),
        strict=True,
    )
)
# No "required": the clients reject an answer that lacks a required key outright, and a
# digest missing one heading is repaired instead (the prompt still asks for all four).
DIGEST_SCHEMA = {
    "type": "object",
    "properties": {key: {"type": "string"} for key in DIGEST_KEYS.values()},
}
TURN_PROMPT_TOKENS = 600  # one oversized turn cannot crowd the others out of the prompt


@dataclass(frozen=True)
class DigestResult:
    text: str
    sections: tuple[tuple[str, str], ...]
    method: str  # llm | repaired (headings filled from the offline digest) | fallback
    model: str  # the model id, "template" after a failure, "offline" without a model
    source_turn_ids: tuple[int, ...]
    fallback_reason: str = ""  # why the model's digest was not used (for logs/admin)


def _source_ids(previous: DigestView | None, turns: Sequence[TurnView]) -> tuple[int, ...]:
    ids = set(previous.source_turn_ids) if previous else set()
    ids.update(turn.id for turn in turns)
    return tuple(sorted(ids))


def _ordered(turns: Sequence[TurnView]) -> list[TurnView]:
    return sorted(turns, key=lambda t: (t.seq, t.id))


def fallback_digest(
    previous: DigestView | None,
    turns: Sequence[TurnView],
    *,
    max_tokens: int = 1500,
    model: str = FALLBACK_MODEL,
    reason: str = "",
) -> DigestResult:
    """The deterministic offline digest. Never raises; never drops a hinge.

    Hinge Index: the previous digest's hinge lines, then one line per hinge turn
    ("- R{round} {speaker}: situation → choice → consequence"). Standing Reasons from
    ``faction:NAME[:STANDING]`` tags, NPC Memory Anchors from ``npc:NAME`` tags, Open
    Threads from ``thread:NAME`` tags (``thread:NAME:resolved`` closes one), each merged
    with the previous digest's lines. Key Facts: the most informative sentences of the
    previous digest's facts and the new turns ("- R{round} {speaker}: …"). Over
    ``max_tokens``, NPC anchors go first, then standings, then threads (oldest first),
    the facts keeping up to half the budget; hinge lines are shortened, never removed.
    """
    ordered = _ordered(turns)
    ids = _source_ids(previous, turns)
    try:
        sections = build_sections(previous_sections(previous), ordered, max_tokens=max_tokens)
    except Exception:  # a bug here must not cost the digest: keep the hinges at least
        log.exception("template digest failed; using the minimal digest")
        sections = minimal_sections(previous_sections(previous), ordered)
    return DigestResult(
        text=render_digest(sections),
        sections=sections,
        method="fallback",
        model=model,
        source_turn_ids=ids,
        fallback_reason=reason,
    )


def _format_turn(turn: TurnView) -> str:
    flags = " HINGE" if turn.hinge else ""
    tags = f" tags: {squash(', '.join(turn.tags))}" if turn.tags else ""  # one line a turn
    content = squash(truncate(turn.content, TURN_PROMPT_TOKENS))
    return f"- [R{turn.round} #{turn.seq} {turn.speaker} {turn.kind}{flags}{tags}] {content}"


def digest_messages(
    previous: DigestView | None, turns: Sequence[TurnView], *, max_tokens: int
) -> list[dict[str, str]]:
    """The prompt: previous digest and new turns in, the four sections as JSON out."""
    keys = ", ".join(f'"{key}" ({heading})' for heading, key in DIGEST_KEYS.items())
    system = (
        "You maintain the rolling memory digest of a tabletop role-playing campaign for "
        "one audience. Fold the previous digest and the new turns into one updated digest. "
        "Use only the text given. Write markdown bullet lines ('- ...') for each section:\n"
        "Hinge Index: every decision point, old and new, as 'R<round> <speaker>: situation "
        "→ choice → consequence'; never drop one.\n"
        "Standing Reasons: each faction's standing toward the party and why.\n"
        "NPC Memory Anchors: who each NPC is and what they last did or want.\n"
        "Open Threads: unresolved questions, promises and goals.\n"
        f"Answer with a JSON object with the keys {keys}; every value a non-empty string. "
        f"Stay under {max_tokens} tokens in total."
    )
    previous_text = previous.text.strip() if previous and previous.text.strip() else "(none)"
    new_turns = "\n".join(_format_turn(t) for t in _ordered(turns)) or "(none)"
    user = f"Previous digest:\n{previous_text}\n\nNew turns:\n{new_turns}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


_HEADING_LINE = re.compile(r"^\s*#+\s*")


def _clean_body(body: str) -> str:
    """Keep the body inside its section: stray markdown headings become plain lines."""
    lines = []
    for line in body.strip().splitlines():
        stripped = line.strip()
        if not stripped or stripped.lstrip("#").strip() in DIGEST_HEADINGS:
            continue
        lines.append(_HEADING_LINE.sub("- ", line) if stripped.startswith("#") else line.rstrip())
    return "\n".join(lines)


def _hinge_key(line: str) -> str | None:
    match = re.match(r"^-\s*(R\d+\s+[^:]+?):", line.strip())
    return match.group(1).lower() if match else None


def _with_all_hinges(body: str, required: list[str]) -> str:
    """Append each required hinge line whose "R<round> <speaker>" the model left out."""
    present = body.lower()
    missing = []
    for line in required:
        key = _hinge_key(line)
        if (key is not None and key not in present) or (key is None and line not in body):
            missing.append(line)
    return "\n".join([body, *missing]) if missing else body


def _model_sections(data: dict) -> list[tuple[str, str]]:
    """The model's four sections in order, a missing or empty one as an empty body."""
    sections = []
    for heading, key in DIGEST_KEYS.items():
        body = data.get(key)
        sections.append((heading, _clean_body(body) if isinstance(body, str) else ""))
    return sections


def _repaired(
    sections: list[tuple[str, str]],
    previous: DigestView | None,
    turns: Sequence[TurnView],
    max_tokens: int,
) -> list[tuple[str, str]]:
    """Fill each empty section from the offline digest of the same turns.

    A digest with no section of the model's own is no repair: that raises, and the
    caller falls back to the offline digest whole.
    """
    missing = [heading for heading, body in sections if not body]
    if len(missing) == len(sections):
        raise InvalidOutputError("The model's digest has none of the required headings.")
    offline = dict(fallback_digest(previous, turns, max_tokens=max_tokens).sections)
    log.warning("digest model left out %s; filled from the offline digest", ", ".join(missing))
    return [(heading, body or offline[heading]) for heading, body in sections]


def draft_digest(
    previous: DigestView | None,
    turns: Sequence[TurnView],
    *,
    client: LLMClient,
    max_tokens: int = 1500,
    timeout: float | None = None,
) -> DigestResult:
    """One model attempt at the digest, missing headings repaired. Raises LLMError
    (InvalidOutputError when nothing of the model's is left or it breaks the length cap
    once repaired); ``make_digest`` handles that."""
    if is_offline(client):
        return fallback_digest(previous, turns, max_tokens=max_tokens, model=OFFLINE_MODEL)
    messages = digest_messages(previous, turns, max_tokens=max_tokens)
    # Room for the whole digest as JSON (keys, quotes, escapes), and no more.
    limit = max_tokens * 5 // 4 + 256
    data = client.complete_json(
        messages, schema=DIGEST_SCHEMA, timeout=timeout, max_output_tokens=limit
    )
    sections = _model_sections(data)
    complete = all(body for _, body in sections)
    if not complete:
        sections = _repaired(sections, previous, turns, max_tokens)
    required = hinge_lines_for(previous_sections(previous), _ordered(turns))
    sections[0] = (sections[0][0], _with_all_hinges(sections[0][1], required))
    text = render_digest(tuple(sections))
    size = count(text)
    if size > max_tokens:
        raise InvalidOutputError(f"The model's digest has {size} tokens; the cap is {max_tokens}.")
    return DigestResult(
        text=text,
        sections=tuple(sections),
        method="llm" if complete else "repaired",
        model=client.model,
        source_turn_ids=_source_ids(previous, turns),
    )


def make_digest(
    previous: DigestView | None,
    turns: Sequence[TurnView],
    *,
    client: LLMClient,
    attempts: int = 3,
    base_delay: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    max_tokens: int = 1500,
    timeout: float | None = None,
) -> DigestResult:
    """The digest to store. Never raises.

    Transient errors (timeout, 429, 5xx, connection) are retried with backoff; a
    missing heading is repaired (`draft_digest`); after that, or on any other failure
    (bad JSON, no heading at all, over the cap, safety block), the offline digest is
    returned with the reason recorded.
    """
    if is_offline(client):
        return fallback_digest(previous, turns, max_tokens=max_tokens, model=OFFLINE_MODEL)
    try:
        return call_with_retries(
            lambda: draft_digest(
                previous, turns, client=client, max_tokens=max_tokens, timeout=timeout
            ),
            attempts=attempts,
            base_delay=base_delay,
            sleep=sleep,
        )
    except Exception as exc:
        reason = f"{getattr(client, 'model', '?')}: {type(exc).__name__}: {exc}"
        log.warning("digest model failed, using the offline digest: %s", reason)
        return fallback_digest(previous, turns, max_tokens=max_tokens, reason=reason)


__all__ = [
    "DIGEST_HEADINGS",
    "DIGEST_KEYS",
    "DIGEST_SCHEMA",
    "FALLBACK_MODEL",
    "NONE_LINE",
    "OFFLINE_MODEL",
    "DigestResult",
    "condense_monologues",
    "detect_milestones",
    "digest_messages",
    "draft_digest",
    "fallback_digest",
    "make_digest",
    "parse_digest",
    "render_digest",
]
