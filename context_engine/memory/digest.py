"""The cold layer (SPEC §5.4): a rolling digest per audience, by model or by template.

The digest is the memory contract: once turns leave the hot window, the digest is all
an agent keeps of them. So a model's digest is validated (four headings, length cap),
hinges it forgot are put back, and on *any* failure the deterministic template takes
over, which by construction keeps every hinge, faction standing and open thread.

Callers pass only turns the audience can read (the Django selector decides that); the
digest never adds text from anywhere else. Offline, the template *is* the digest: it is
returned with ``method="fallback"`` and ``model="offline"``, because the Summary model's
method field knows only ``llm | fallback``.
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
DIGEST_SCHEMA = {
    "type": "object",
    "properties": {key: {"type": "string"} for key in DIGEST_KEYS.values()},
    "required": list(DIGEST_KEYS.values()),
}
TURN_PROMPT_TOKENS = 600  # one oversized turn cannot crowd the others out of the prompt


@dataclass(frozen=True)
class DigestResult:
    text: str
    sections: tuple[tuple[str, str], ...]
    method: str  # llm | fallback
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
    """The deterministic template digest. Never raises; never drops a hinge.

    Hinge Index: the previous digest's hinge lines, then one line per hinge turn
    ("- R{round} {speaker}: situation → choice → consequence"). Standing Reasons from
    ``faction:NAME[:STANDING]`` tags, NPC Memory Anchors from ``npc:NAME`` tags, Open
    Threads from ``thread:NAME`` tags (``thread:NAME:resolved`` closes one), each merged
    with the previous digest's lines. Over ``max_tokens``, NPC anchors go first, then
    standings, then threads (oldest first); hinge lines are shortened, never removed.
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
    tags = f" tags: {', '.join(turn.tags)}" if turn.tags else ""
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


def draft_digest(
    previous: DigestView | None,
    turns: Sequence[TurnView],
    *,
    client: LLMClient,
    max_tokens: int = 1500,
    timeout: float | None = None,
) -> DigestResult:
    """One model attempt at the digest. Raises LLMError (InvalidOutputError when the
    answer lacks a heading or breaks the length cap); ``make_digest`` handles that."""
    if is_offline(client):
        return fallback_digest(previous, turns, max_tokens=max_tokens, model=OFFLINE_MODEL)
    messages = digest_messages(previous, turns, max_tokens=max_tokens)
    data = client.complete_json(messages, schema=DIGEST_SCHEMA, timeout=timeout)
    sections: list[tuple[str, str]] = []
    for heading, key in DIGEST_KEYS.items():
        body = data.get(key)
        body = _clean_body(body) if isinstance(body, str) else ""
        if not body:
            raise InvalidOutputError(f"The model's digest is missing the heading {heading!r}.")
        sections.append((heading, body))
    required = hinge_lines_for(previous_sections(previous), _ordered(turns))
    sections[0] = (sections[0][0], _with_all_hinges(sections[0][1], required))
    text = render_digest(tuple(sections))
    size = count(text)
    if size > max_tokens:
        raise InvalidOutputError(f"The model's digest has {size} tokens; the cap is {max_tokens}.")
    return DigestResult(
        text=text,
        sections=tuple(sections),
        method="llm",
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

    Transient errors (timeout, 429, 5xx, connection) are retried with backoff; after
    that, or on any other failure (bad JSON, missing heading, over the cap, safety
    block), the template fallback is returned with the reason recorded.
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
        log.warning("digest model failed, using the template: %s", reason)
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
