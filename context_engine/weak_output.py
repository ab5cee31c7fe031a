"""Weak model output: answers with no usable labels, and format instructions echoed back
(issue 26, ask 4).

A small model often answers a step with plain prose (no labelled block), or copies the
answer format it was given ("PUBLIC: what everyone sees you do or say.") as if it were
its answer. `usable` says whether a parsed answer has anything the relay can store as a
turn; `drop_echoes` removes the items that are the instructions echoed back (never
stored as turns); `repair_instruction` (in `context_engine.relay`) asks once more.

Pure Python: no Django, deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from context_engine.agent_output import ParsedTurn

NO_LABELS = "no labels"
ECHOED = "echoed the format instructions"
QUOTES = "quotes"  # the output leak guard's reason (`campaigns.services.output_guard`)

# Placeholder text of the format templates: a model that writes these copied the format.
_PLACEHOLDERS = re.compile(
    r"\bto NAME\b|\bNAME\s*:|npc:\s*Name\b|thread:\s*topic\b|/search QUERY|/lore TERM"
    r"|FROM\.\.TO|\{dm\}",
)
_WORD = re.compile(r"[a-z][a-z']+")
ECHO_SHARE = 0.75  # this share of an item's words taken from the instructions: an echo
ECHO_MIN_WORDS = 4  # fewer words than this are too few to call an echo by overlap


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 3]


def is_echo(content: str, instructions: str, *, names: Iterable[str] = ()) -> bool:
    """True when ``content`` is essentially ``instructions`` (a step's instruction and
    format) echoed back: it holds a template placeholder, or at least `ECHO_SHARE` of its
    words (of three letters or more; at least `ECHO_MIN_WORDS`) come from them, or it is
    a phrase of three words or more copied from them word for word. ``names`` (the
    cast's roles) are the answer's own words, not the format's: never counted."""
    if _PLACEHOLDERS.search(content):
        return True
    phrase = _WORD.findall(content.lower())
    if (
        len(phrase) >= 2
        and f" {' '.join(phrase)} " in f" {' '.join(_WORD.findall(instructions.lower()))} "
    ):
        return True
    own = {word for name in names for word in _words(name)}
    words = [word for word in _words(content) if word not in own]
    if len(words) < ECHO_MIN_WORDS:
        return False
    known = set(_words(instructions)) - own
    shared = sum(1 for word in words if word in known)
    return shared / len(words) >= ECHO_SHARE


def drop_echoes(
    parsed: Iterable[ParsedTurn], instructions: str, *, names: Iterable[str] = ()
) -> tuple[list[ParsedTurn], int]:
    """The items that are not echoes of ``instructions``, and how many were dropped."""
    kept: list[ParsedTurn] = []
    dropped = 0
    for item in parsed:
        if is_echo(item.content, instructions, names=names):
            dropped += 1
        else:
            kept.append(item)
    return kept, dropped


def usable(parsed: Iterable[ParsedTurn]) -> bool:
    """Whether an answer has anything to store as a turn: one labelled item that did not
    fail closed (an answer of only review items is unusable)."""
    return any(not item.needs_review for item in parsed)
