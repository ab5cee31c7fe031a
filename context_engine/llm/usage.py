"""What one model call cost, and how byte-stable its prompt was against the last one.

Providers cache a prompt's *prefix*: Gemini explicitly (a cached content named in the
call), OpenAI-compatible servers automatically (the longest prefix they have seen). Both
only help when an agent's prompt starts with the same bytes call after call, so the relay
measures that share per call. To do it without keeping any prompt text, a prompt is
reduced to a chain of block fingerprints: fingerprint *i* hashes every byte up to the end
of block *i*, so two prompts share exactly the blocks before their first differing
fingerprint. The share is exact to one block (``PREFIX_BLOCK_BYTES``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from context_engine.llm.base import Message, call_status
from context_engine.tokens import count

PREFIX_BLOCK_BYTES = 64
FINGERPRINT_CHARS = 12
# Gemini 2.5 Flash's largest answer; the documented ceiling for a participant's setting.
MAX_OUTPUT_TOKENS_LIMIT = 65_536
TEMPERATURE_MAX = 2.0


@dataclass(frozen=True)
class Usage:
    """Token counts as the provider reported them (offline: our own counter, cached 0)."""

    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_out: int = 0
    cache_name: str = ""  # the Gemini cached content used, if any

    def as_dict(self) -> dict[str, int | str]:
        return {
            "tokens_in": self.tokens_in,
            "tokens_cached": self.tokens_cached,
            "tokens_out": self.tokens_out,
            "cache_name": self.cache_name,
        }


@dataclass(frozen=True)
class GenerationOptions:
    """A participant's sampling settings; ``None`` leaves the provider's default."""

    temperature: float | None = None
    max_output_tokens: int | None = None


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage


def count_messages(messages: Sequence[Message]) -> int:
    """Tokens of ``messages`` by the project's counter (when a server sends no usage)."""
    return sum(count(m.get("content", "")) for m in messages)


def prompt_bytes(messages: Sequence[Message]) -> bytes:
    """The prompt as one byte string, in the order the providers receive it."""
    return b"".join(f"{m.get('role', '')}\x00{m.get('content', '')}\x00".encode() for m in messages)


def prefix_fingerprints(data: bytes, *, block: int = PREFIX_BLOCK_BYTES) -> list[str]:
    """Chained fingerprints, one per block; the last block may be shorter."""
    out: list[str] = []
    running = hashlib.sha256()
    for start in range(0, len(data), block):
        running.update(data[start : start + block])
        out.append(running.copy().hexdigest()[:FINGERPRINT_CHARS])
    return out


def stable_share(
    previous: Sequence[str] | None, current: Sequence[str], current_bytes: int
) -> float | None:
    """Share of the current prompt's bytes identical to the previous call's prefix.

    ``None`` when there is no previous call to compare with (an agent's first call).
    """
    if previous is None:
        return None
    if current_bytes <= 0:
        return 1.0
    same = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        same += 1
    return round(min(1.0, same * PREFIX_BLOCK_BYTES / current_bytes), 4)


def prefix_hash(text: str) -> str:
    """The key a cached prefix is registered under: changes iff the prefix text changes."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# -- collecting the usage of calls made deep inside the engine ---------------------------
# Memory tasks (digests, definitions, vetting) call models through engine functions that
# return only their result. A caller that wants those calls' usage opens
# `collecting_usage`; every call a client completes meanwhile, in this thread or task
# context, is appended to the list it yields. With none open, nothing is kept.


@dataclass(frozen=True)
class CallRecord:
    """One model call: which model, the prompt as sent, what it cost, how it ended.

    ``status`` is ``ok``, ``timed_out``, ``too_long`` or ``failed`` (`base.call_status`);
    a call that did not answer has ``error`` (the server's text) and zero usage.
    """

    model: str
    messages: tuple[Message, ...]
    usage: Usage
    status: str = "ok"
    error: str = ""
    seconds: float | None = None


_collector: ContextVar[list[CallRecord] | None] = ContextVar("babel_llm_usage", default=None)


@contextmanager
def collecting_usage() -> Iterator[list[CallRecord]]:
    """The calls completed inside the block, in order (nested blocks each see their own)."""
    calls: list[CallRecord] = []
    token = _collector.set(calls)
    try:
        yield calls
    finally:
        _collector.reset(token)


def report_usage(
    model: str, messages: Sequence[Message], usage: Usage, *, seconds: float | None = None
) -> None:
    """Called by the clients after each completed call."""
    calls = _collector.get()
    if calls is not None:
        calls.append(
            CallRecord(model=model, messages=tuple(messages), usage=usage, seconds=seconds)
        )


ERROR_CHARS = 500


def report_failure(
    model: str, messages: Sequence[Message], error: BaseException, seconds: float | None = None
) -> None:
    """Called by the clients when a call ends without an answer (timeout, refusal, error),
    so a failed call is in the usage records with its status and the server's words."""
    calls = _collector.get()
    if calls is not None:
        calls.append(
            CallRecord(
                model=model,
                messages=tuple(messages),
                usage=Usage(),
                status=call_status(error),
                error=" ".join(str(error).split())[:ERROR_CHARS],
                seconds=seconds,
            )
        )
