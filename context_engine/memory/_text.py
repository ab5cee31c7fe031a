"""Tiny text helpers shared by the digest, monologue and extraction code.

Deliberately simple and deterministic (no NLP models): sentence boundaries are
punctuation followed by space, or a line break. Abbreviations may split a sentence in
two; that only shortens an extract, it never mixes text from different turns.
"""

from __future__ import annotations

import re

_BOUNDARY = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+")


def squash(text: str) -> str:
    """Collapse all whitespace runs (including newlines) to single spaces."""
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, whitespace-normalised, empty pieces dropped."""
    pieces = (squash(piece) for piece in _BOUNDARY.split(text or ""))
    return [piece for piece in pieces if piece]


def first_sentence(text: str) -> str:
    found = sentences(text)
    return found[0] if found else ""


def clip_words(text: str, limit: int) -> str:
    """At most ``limit`` words, with an ellipsis when something was cut."""
    words = text.split()
    if len(words) <= limit:
        return " ".join(words)
    return " ".join(words[:limit]).rstrip(",;:") + "…"
