"""The client used when no model is configured: deterministic and never on the network.

Memory functions check ``is_offline(client)`` and run their own extractive paths (the
template digest, the first-use sentence), which know the task far better than a generic
client can. This class still honours the interface so any other caller gets a stable,
schema-valid answer: the first sentences of the last user message.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from context_engine.llm.base import Message, validate_json
from context_engine.llm.usage import Completion, GenerationOptions, Usage
from context_engine.tokens import count

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _extract(messages: list[Message], max_words: int) -> str:
    users = [m.get("content", "") for m in messages if m.get("role") == "user"]
    source = (users[-1] if users else "").strip()
    if not source:
        return ""
    sentence = _SENTENCE_END.split(source, maxsplit=1)[0]
    words = sentence.split()
    return " ".join(words[:max_words])


def _fill(schema: dict, text: str) -> object:
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        keys = list(schema.get("required") or properties)
        return {key: _fill(properties.get(key) or {"type": "string"}, text) for key in keys}
    return {"string": text, "array": [], "integer": 0, "number": 0, "boolean": False}.get(kind)


class OfflineClient:
    """Deterministic stand-in for a model: same messages, same answer, no I/O."""

    offline = True

    def __init__(self, model: str = "offline", *, max_words: int = 60):
        self.model = model
        self.max_words = max_words

    def complete(
        self,
        messages: list[Message],
        *,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> str:
        return _extract(messages, self.max_words)

    def complete_json(
        self,
        messages: list[Message],
        *,
        schema: dict,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> dict:
        data = _fill(schema, _extract(messages, self.max_words))
        return validate_json(data, schema)

    def complete_with_usage(
        self,
        messages: list[Message],
        *,
        options: GenerationOptions | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """``complete`` with usage counted by the project's token counter (nothing cached)."""
        text = self.complete(messages, timeout=timeout)
        return Completion(text=text, usage=offline_usage(messages, text))

    def stream_with_usage(
        self,
        messages: list[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        options: GenerationOptions | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """`complete_with_usage`, its answer passed to ``on_text`` a word at a time."""
        completion = self.complete_with_usage(messages, options=options, timeout=timeout)
        if on_text is not None:
            for piece in word_chunks(completion.text):
                on_text(piece)
        return completion


_PIECE = re.compile(r"\s*\S+|\s+$")


def word_chunks(text: str) -> list[str]:
    """``text`` as a model streams it: one word a chunk, each with the space before it
    (joined they are ``text``)."""
    return _PIECE.findall(text)


def offline_usage(messages: list[Message], answer: str) -> Usage:
    """What an offline call would have cost a model: tokens in and out, none cached."""
    tokens_in = sum(count(m.get("content", "")) for m in messages)
    return Usage(tokens_in=tokens_in, tokens_cached=0, tokens_out=count(answer))
