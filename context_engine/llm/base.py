"""The one small interface every memory task talks to, its errors and retry policy.

Memory workers must never care which backend answers: Gemini, an OpenAI-compatible
local server or the offline client all take chat-style messages and return text or a
JSON object already checked against a schema. The error classes carry the only decision
a caller has to make: ``TransientLLMError`` is worth retrying (timeouts, connection
errors, 429, 5xx); everything else goes straight to the deterministic fallback.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}

T = TypeVar("T")


class LLMError(Exception):
    """Any failure of a model call. Callers that fall back catch this."""


class TransientLLMError(LLMError):
    """Worth retrying: timeout, connection refused/reset, HTTP 408/429/5xx."""


class PermanentLLMError(LLMError):
    """Retrying will not help: other 4xx (bad key, bad request), safety block."""


class LLMTimeoutError(TransientLLMError):
    """The call took longer than its timeout; the client closed the connection, so the
    server (llama.cpp, Ollama, vLLM all watch for it) stops generating."""


class ContextLengthError(PermanentLLMError):
    """The server said the prompt (plus the answer asked for) is longer than the model's
    context window. Retrying the same prompt cannot help; a smaller one may.

    ``limit`` and ``prompt_tokens`` are the numbers the server gave, when it gave them.
    """

    def __init__(self, message: str, *, limit: int | None = None, prompt_tokens: int | None = None):
        super().__init__(message)
        self.limit = limit
        self.prompt_tokens = prompt_tokens

    def restated(self, said: str) -> ContextLengthError:
        """The same refusal worded ``said`` (the client's), with the numbers in words."""
        if self.limit and self.prompt_tokens and str(self.limit) not in said:
            said += f" (window {self.limit} tokens, prompt {self.prompt_tokens})"
        return ContextLengthError(said, limit=self.limit, prompt_tokens=self.prompt_tokens)


# How servers say "too long" (a 400, sometimes a 413/422): OpenAI and vLLM ("maximum
# context length is 8192 tokens … resulted in 11000 tokens", code context_length_exceeded),
# llama.cpp ("the request exceeds the available context size", exceed_context_size_error,
# with n_prompt_tokens / n_ctx), LM Studio ("context length … overflows"), Gemini ("The
# input token count (N) exceeds the maximum number of tokens allowed (M)").
_TOO_LONG = re.compile(
    r"context[_ ]length|context (?:size|window)|exceed_context_size|maximum context"
    r"|input token count|too many tokens|prompt is too long|context overflow",
    re.IGNORECASE,
)
_NUMBERS = (
    # (limit, prompt) in the order the message gives them
    (re.compile(r"maximum context length is (\d+).*?(\d+) tokens", re.I | re.S), "limit_first"),
    (
        re.compile(r"input token count \((\d+)\) exceeds.*?allowed \((\d+)\)", re.I | re.S),
        "prompt_first",
    ),
    (re.compile(r"n_prompt_tokens\W+(\d+).*?n_ctx\W+(\d+)", re.I | re.S), "prompt_first"),
    (
        re.compile(r"keep the first (\d+) tokens.*?context length of only (\d+)", re.I | re.S),
        "prompt_first",
    ),
)


def context_length_error(message: str) -> ContextLengthError | None:
    """A `ContextLengthError` if ``message`` is a server's "too long", else None."""
    if not _TOO_LONG.search(message or ""):
        return None
    limit = prompt = None
    for pattern, order in _NUMBERS:
        found = pattern.search(message)
        if found:
            a, b = int(found.group(1)), int(found.group(2))
            limit, prompt = (a, b) if order == "limit_first" else (b, a)
            break
    return ContextLengthError(message, limit=limit, prompt_tokens=prompt)


class StreamInterruptedError(LLMError):
    """A streamed answer failed after its first chunk was passed on (issue 25). Never
    retried — what was shown cannot be taken back by a second, different answer — so the
    step fails and falls back as any failed call does. ``status`` is how it ended
    (``timed_out`` when the stream stalled or overran its time, else ``failed``)."""

    def __init__(self, message: str, *, status: str = "failed", text: str = ""):
        super().__init__(message)
        self.status = status
        self.text = text  # what had arrived before it broke


def call_status(exc: BaseException | None) -> str:
    """How a call ended, for the usage record: ok, timed_out, too_long or failed."""
    if exc is None:
        return "ok"
    if isinstance(exc, StreamInterruptedError):
        return exc.status
    if isinstance(exc, LLMTimeoutError):
        return "timed_out"
    if isinstance(exc, ContextLengthError):
        return "too_long"
    return "failed"


class InvalidOutputError(LLMError):
    """The model answered, but not usefully: bad JSON, missing fields, empty text."""


# The output limit of a memory call (`complete`, `complete_json`) that names none: a
# definition, a verdict list or a monologue summary is far shorter, and a small local
# model left unbounded was seen writing 5,500 tokens (400 s on a CPU) for one answer.
MEMORY_MAX_OUTPUT_TOKENS = 1024


@runtime_checkable
class LLMClient(Protocol):
    """Messages in, text or validated JSON out. ``model`` is the id it was built for.

    Every call is bounded: ``max_output_tokens`` (default `MEMORY_MAX_OUTPUT_TOKENS`).
    """

    model: str

    def complete(
        self,
        messages: list[Message],
        *,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> str: ...

    def complete_json(
        self,
        messages: list[Message],
        *,
        schema: dict,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> dict: ...


def is_offline(client: object) -> bool:
    """True for clients that never reach a model; memory code takes its extractive path."""
    return bool(getattr(client, "offline", False))


def split_system(messages: Sequence[Message]) -> tuple[str, list[Message]]:
    """Separate system messages (joined) from the conversation, for Gemini's shape."""
    system = [m["content"] for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    return "\n\n".join(system), rest


_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def parse_json_object(text: str | None) -> dict:
    """Parse a model's JSON answer. Local models often wrap it in a ``` fence: unwrap."""
    if text is None or not text.strip():
        raise InvalidOutputError("The model returned no text where JSON was expected.")
    match = _FENCE.match(text)
    if match:
        text = match.group(1)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidOutputError(f"The model returned malformed JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidOutputError("The model returned JSON that is not an object.")
    return data


def _type_ok(value: Any, expected: str) -> bool:
    kinds = _JSON_TYPES.get(expected.lower())
    if kinds is None:
        return True  # a type this small validator does not know: do not reject on it
    if isinstance(value, bool) and expected.lower() in ("integer", "number"):
        return False
    return isinstance(value, kinds)


def validate_json(data: Any, schema: dict, *, path: str = "$") -> dict:
    """Check required keys and declared types (one level per object, recursively).

    Deliberately small: the schemas used by memory tasks are flat objects of strings,
    and a full JSON Schema engine would be one more dependency for no extra safety.
    """
    expected = str(schema.get("type", "object"))
    if not _type_ok(data, expected):
        raise InvalidOutputError(f"{path} should be {expected.lower()}, got {type(data).__name__}.")
    if not isinstance(data, dict):
        return data
    properties = schema.get("properties") or {}
    for key in schema.get("required") or ():
        if key not in data:
            raise InvalidOutputError(f"{path} is missing the required field {key!r}.")
    for key, subschema in properties.items():
        if key in data and isinstance(subschema, dict) and "type" in subschema:
            validate_json(data[key], subschema, path=f"{path}.{key}")
    return data


def call_with_retries(
    fn: Callable[[], T],
    *,
    attempts: int = 3,
    base_delay: float = 0.5,
    max_delay: float = 8.0,
    sleep: Callable[[float], None] = time.sleep,
    retry_timeouts: bool = True,
) -> T:
    """Call ``fn``, retrying only TransientLLMError with exponential backoff.

    No jitter: delays are ``base_delay * 2**n`` so tests and logs are reproducible.
    The SDKs' own retries are switched off, so this is the only retry loop.
    ``retry_timeouts=False``: a timed-out call is not sent again (a model on a CPU that
    took too long will take as long again, and holds the round meanwhile).
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    for attempt in range(attempts):
        try:
            return fn()
        except TransientLLMError as exc:
            if attempt == attempts - 1 or (isinstance(exc, LLMTimeoutError) and not retry_timeouts):
                raise
            sleep(min(max_delay, base_delay * (2**attempt)))
    raise AssertionError("unreachable")  # pragma: no cover


class StreamGuard:
    """The bookkeeping every streaming client shares: pass each text piece on, keep the
    whole text, enforce the call's time budget, and turn a failure after the first piece
    into `StreamInterruptedError` (before it, the error stays retryable as it was).

    ``seconds`` bounds the whole answer, as a plain call's timeout bounds it; a stall
    between chunks is caught by the transport's read timeout (the same ``seconds``).
    """

    def __init__(self, *, model: str, seconds: float, on_text: Callable[[str], None] | None):
        self.model = model
        self.seconds = seconds
        self.on_text = on_text
        self.pieces: list[str] = []
        self.started = time.monotonic()

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def sent(self) -> bool:
        return bool(self.pieces)

    def piece(self, text: str | None) -> None:
        if text:
            self.pieces.append(text)
            if self.on_text is not None:
                self.on_text(text)
        if time.monotonic() - self.started > self.seconds:
            raise LLMTimeoutError(f"{self.model} streamed past its {self.seconds:g}s timeout")

    def failed(self, exc: LLMError) -> LLMError:
        """The error to raise for ``exc``: itself before the first piece, else interrupted."""
        if not self.sent or isinstance(exc, StreamInterruptedError):
            return exc
        status = "timed_out" if isinstance(exc, LLMTimeoutError) else "failed"
        return StreamInterruptedError(
            f"{self.model} stream broke after {len(self.pieces)} chunks: {exc}",
            status=status,
            text=self.text,
        )


def schema_instruction(schema: dict) -> str:
    """The system note that tells a JSON-mode model which object to produce."""
    return (
        "Reply with one JSON object only, no prose and no code fence, matching this "
        "JSON Schema: " + json.dumps(schema, sort_keys=True)
    )


def _transport_errors(name: str) -> tuple[type[BaseException], ...]:
    """The SDKs run on httpx or its fork httpx2, whichever is installed (a stream read
    raises theirs directly): catch both."""
    found: list[type[BaseException]] = []
    for module_name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        found.append(getattr(module, name))
    return tuple(found)


TIMEOUT_ERRORS = _transport_errors("TimeoutException")
TRANSPORT_ERRORS = _transport_errors("TransportError")
