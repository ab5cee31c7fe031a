"""Any OpenAI-compatible chat server (LM Studio, Ollama, llama.cpp, vLLM, OpenAI).

``max_retries=0`` turns off the SDK's retries: ``call_with_retries`` owns that policy.
JSON asks for ``response_format={"type": "json_schema", …}`` (structured output: OpenAI,
vLLM, llama.cpp, LM Studio) and, when a server refuses that — a 4xx, or a 5xx whose body
names the format (llama-cpp-python) — falls back to ``{"type": "json_object"}`` (the
widest-supported mode) and remembers the refusal for that server and model. Every memory
call carries an output limit (`MEMORY_MAX_OUTPUT_TOKENS` unless the caller names one), and
every refusal is logged with the server's text. Either way the schema is also spelled out
in a system note, and our own validation follows, since a server may honour the mode
loosely.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import openai

from context_engine.llm.base import (
    MEMORY_MAX_OUTPUT_TOKENS,
    InvalidOutputError,
    LLMError,
    LLMTimeoutError,
    Message,
    PermanentLLMError,
    StreamGuard,
    TransientLLMError,
    context_length_error,
    parse_json_object,
    schema_instruction,
    validate_json,
)
from context_engine.llm.base import (
    TIMEOUT_ERRORS as _TIMEOUT_ERRORS,
)
from context_engine.llm.base import (
    TRANSPORT_ERRORS as _TRANSPORT_ERRORS,
)
from context_engine.llm.usage import (
    Completion,
    GenerationOptions,
    Usage,
    count_messages,
    report_failure,
    report_usage,
)
from context_engine.tokens import count

log = logging.getLogger(__name__)


_TRANSIENT_STATUS = {408, 409, 429}
_FORMAT_WORDS = ("json_schema", "response_format")  # a refusal of the format names it
# (base_url, model) pairs that refused json_schema once: no second refusal per call.
_NO_JSON_SCHEMA: set[tuple[str, str]] = set()
# (base_url, model) pairs that refused ``stream_options`` once (older local servers).
_NO_STREAM_USAGE: set[tuple[str, str]] = set()


class _Refused(PermanentLLMError):
    """The server refused the request's output format (a 4xx, or a 5xx whose body names
    the format): JSON mode may work where structured output did not."""


class OpenAICompatibleClient:
    """``LLMClient`` on the openai SDK pointed at ``base_url``."""

    offline = False

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None = None,
        timeout_seconds: float = 30.0,
        model_id: str | None = None,
        cpu: bool = False,
    ):
        self.model = model
        self.cpu = cpu  # a CPU preset: a timed-out call is not sent again
        self.model_id = model_id or f"openai:{model}"  # what usage records name
        self.base_url = base_url
        self.timeout_seconds = timeout_seconds
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout_seconds,
            max_retries=0,
        )

    def _chat(self, messages: list[Message], timeout: float | None, **extra: object) -> str:
        return self._answer(messages, timeout, **extra)[0]

    def _answer(
        self, messages: list[Message], timeout: float | None, **extra: object
    ) -> tuple[str, object]:
        seconds = self.timeout_seconds if timeout is None else timeout
        started = time.monotonic()
        try:
            response = self._send(messages, seconds, extra)
        except LLMError as exc:
            report_failure(self.model_id, messages, exc, time.monotonic() - started)
            raise
        report_usage(
            self.model_id, messages, _usage_of(response), seconds=time.monotonic() - started
        )
        choices = getattr(response, "choices", None)
        if not choices:
            raise InvalidOutputError(f"{self.model} returned no choices.")
        choice = choices[0]
        if choice.finish_reason == "content_filter":
            raise PermanentLLMError(f"{self.model} filtered the answer (content_filter).")
        text = choice.message.content if choice.message else None
        if not text or not text.strip():
            raise InvalidOutputError(f"{self.model} returned an empty answer.")
        return text, response

    def _send(self, messages: list[Message], seconds: float, extra: dict) -> object:
        """One request; SDK and transport failures → our error kinds. A timeout drops
        the connection (httpx closes it), which llama.cpp, Ollama and vLLM take as
        "stop generating"."""
        with self._translated(seconds, extra):
            return self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                timeout=seconds,
                **extra,  # type: ignore[arg-type]
            )

    @contextmanager
    def _translated(self, seconds: float, extra: dict) -> Iterator[None]:
        """SDK and transport failures (also while a stream is read) → our error kinds."""
        try:
            yield
        except (openai.APITimeoutError, *_TIMEOUT_ERRORS) as exc:
            raise LLMTimeoutError(f"{self.model_id} timed out after {seconds:g}s") from exc
        except (openai.APIConnectionError, *_TRANSPORT_ERRORS) as exc:
            raise TransientLLMError(f"{self.model_id} connection failed: {exc}") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            said = f"{self.model_id} HTTP {status}: {exc.message}"
            body = json.dumps(exc.body, default=str) if exc.body is not None else ""
            # Every refusal is logged with the server's own words (they are the diagnosis).
            log.warning("%s (server said: %s)", said, (body or str(exc.message))[:1000])
            too_long = context_length_error(f"{exc.message} {body}")
            if too_long is not None and status < 500:
                raise too_long.restated(said) from exc
            text = f"{exc.message} {body}".lower()
            if (
                "response_format" in extra
                and status not in _TRANSIENT_STATUS
                and any(word in text for word in _FORMAT_WORDS)
            ):
                raise _Refused(said) from exc
            if status in _TRANSIENT_STATUS or status >= 500:
                raise TransientLLMError(said) from exc
            raise PermanentLLMError(said) from exc
        except openai.OpenAIError as exc:  # response validation and similar
            raise InvalidOutputError(f"{self.model_id} response could not be read: {exc}") from exc
        except ValueError as exc:  # a body that is not JSON
            raise InvalidOutputError(f"{self.model_id} response is not JSON: {exc}") from exc

    def complete_with_usage(
        self,
        messages: list[Message],
        *,
        options: GenerationOptions | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """``complete`` plus the usage block and the participant's sampling settings.

        ``max_tokens`` rather than ``max_completion_tokens``: every OpenAI-compatible local
        server (LM Studio, Ollama, llama.cpp, vLLM) reads it.
        """
        extra: dict[str, object] = {}
        if options is not None and options.temperature is not None:
            extra["temperature"] = options.temperature
        if options is not None and options.max_output_tokens is not None:
            extra["max_tokens"] = options.max_output_tokens
        text, response = self._answer(list(messages), timeout, **extra)
        return Completion(text=text, usage=_usage_of(response))

    def stream_with_usage(
        self,
        messages: list[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        options: GenerationOptions | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """`complete_with_usage`, streamed (issue 25): ``stream=True``, each text delta
        passed to ``on_text`` as it arrives, the usage from the final chunk
        (``stream_options.include_usage``; a server that refuses the option is asked
        without it, and its answer counted with the project's counter). One attempt: a
        failure before the first delta is retryable as usual, after it
        `StreamInterruptedError`. The answer's whole time is bounded by the timeout."""
        extra: dict[str, object] = {"stream": True}
        if options is not None and options.temperature is not None:
            extra["temperature"] = options.temperature
        if options is not None and options.max_output_tokens is not None:
            extra["max_tokens"] = options.max_output_tokens
        server = (self.base_url, self.model)
        if server not in _NO_STREAM_USAGE:
            extra["stream_options"] = {"include_usage": True}
        seconds = self.timeout_seconds if timeout is None else timeout
        guard = StreamGuard(model=self.model_id, seconds=seconds, on_text=on_text)
        messages = list(messages)
        try:
            try:
                stream = self._send(messages, seconds, extra)
            except PermanentLLMError as exc:
                if "stream_options" not in extra or "stream_options" not in str(exc):
                    raise
                _NO_STREAM_USAGE.add(server)  # an older server: no usage chunk
                extra.pop("stream_options")
                stream = self._send(messages, seconds, extra)
            usage, finish = self._read_stream(stream, guard, seconds, extra)
        except LLMError as exc:
            failure = guard.failed(exc)
            report_failure(self.model_id, messages, failure, time.monotonic() - guard.started)
            if failure is exc:
                raise
            raise failure from exc
        text = guard.text
        if usage is None:
            usage = Usage(tokens_in=count_messages(messages), tokens_out=count(text))
        report_usage(self.model_id, messages, usage, seconds=time.monotonic() - guard.started)
        if finish == "content_filter":
            raise PermanentLLMError(f"{self.model} filtered the answer (content_filter).")
        if not text.strip():
            raise InvalidOutputError(f"{self.model} returned an empty answer.")
        return Completion(text=text, usage=usage)

    def _read_stream(
        self, stream, guard: StreamGuard, seconds: float, extra: dict
    ) -> tuple[Usage | None, str | None]:
        usage: Usage | None = None
        finish: str | None = None
        try:
            with self._translated(seconds, extra):
                for chunk in stream:
                    if getattr(chunk, "usage", None) is not None:
                        usage = _usage_of(chunk)
                    for choice in getattr(chunk, "choices", None) or []:
                        if choice.finish_reason:
                            finish = choice.finish_reason
                        delta = getattr(choice, "delta", None)
                        guard.piece(getattr(delta, "content", None))
                    if not getattr(chunk, "choices", None):
                        guard.piece(None)  # the time budget is checked on every chunk
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # a timed-out stream drops its connection: the server stops
        return usage, finish

    def complete(
        self,
        messages: list[Message],
        *,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> str:
        limit = max_output_tokens or MEMORY_MAX_OUTPUT_TOKENS
        return self._chat(list(messages), timeout, max_tokens=limit)

    def complete_json(
        self,
        messages: list[Message],
        *,
        schema: dict,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> dict:
        """Structured output, else JSON mode once the server refused it (any status whose
        body names the format: llama-cpp-python answers json_schema with a 500)."""
        note = {"role": "system", "content": schema_instruction(schema)}
        asked = [note, *messages]
        limit = max_output_tokens or MEMORY_MAX_OUTPUT_TOKENS
        server = (self.base_url, self.model)
        if server not in _NO_JSON_SCHEMA:
            structured = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": False},
            }
            try:
                text = self._chat(asked, timeout, response_format=structured, max_tokens=limit)
                return validate_json(parse_json_object(text), schema)
            except _Refused:
                _NO_JSON_SCHEMA.add(server)
        text = self._chat(asked, timeout, response_format={"type": "json_object"}, max_tokens=limit)
        return validate_json(parse_json_object(text), schema)


def _usage_of(response: object) -> Usage:
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
        tokens_cached=int(getattr(details, "cached_tokens", 0) or 0),
        tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
    )
