"""Gemini over the google-genai SDK.

The SDK's own retry loop is disabled (one attempt) so ``call_with_retries`` is the only
place that decides to retry, and every SDK or transport failure is translated into our
three error kinds here, at the boundary, so nothing above knows the SDK exists.
Structured output (``response_mime_type`` + ``response_schema``) makes the model itself
respect the JSON shape; we still validate, because a proxy or a stand-in may not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from google import genai
from google.genai import errors as genai_errors
from google.genai import types

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
    split_system,
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
    report_failure,
    report_usage,
)

_TRANSIENT_STATUS = {408, 429, 500, 502, 503, 504}


_BLOCKED_FINISH = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION"}


@contextmanager
def _translated_errors(seconds: float) -> Iterator[None]:
    """SDK and transport failures → our three error kinds, at the boundary."""
    try:
        yield
    except genai_errors.APIError as exc:
        said = f"Gemini HTTP {exc.code}: {exc.message}"
        too_long = context_length_error(str(exc.message or ""))
        if too_long is not None and (exc.code or 0) < 500:
            raise too_long.restated(said) from exc
        if exc.code in _TRANSIENT_STATUS or (exc.code or 0) >= 500:
            raise TransientLLMError(said) from exc
        raise PermanentLLMError(said) from exc
    except genai_errors.UnknownApiResponseError as exc:
        raise InvalidOutputError(f"Gemini sent a response that is not JSON: {exc}") from exc
    except _TIMEOUT_ERRORS as exc:
        raise LLMTimeoutError(f"Gemini timed out after {seconds:g}s") from exc
    except _TRANSPORT_ERRORS as exc:
        raise TransientLLMError(f"Gemini connection failed: {exc}") from exc
    except (ValueError, TypeError) as exc:  # the SDK could not read the response
        raise InvalidOutputError(f"Gemini response could not be read: {exc}") from exc


def _to_contents(messages: list[Message]) -> tuple[str, list[types.Content]]:
    system, rest = split_system(messages)
    contents = [
        types.Content(
            role="model" if m.get("role") == "assistant" else "user",
            parts=[types.Part(text=m.get("content", ""))],
        )
        for m in rest
    ]
    if not contents:  # Gemini needs at least one user turn.
        contents = [types.Content(role="user", parts=[types.Part(text=system or " ")])]
        system = ""
    return system, contents


class GeminiClient:
    """``LLMClient`` on google-genai. ``base_url`` points it at a stand-in or proxy."""

    offline = False

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        timeout_seconds: float = 30.0,
        model_id: str | None = None,
    ):
        self.model = model
        self.model_id = model_id or model  # what usage records name
        self.timeout_seconds = timeout_seconds
        self._client = genai.Client(
            api_key=api_key,
            vertexai=False,
            http_options=types.HttpOptions(
                base_url=base_url,
                timeout=int(timeout_seconds * 1000),
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )

    def _generate(self, messages: list[Message], timeout: float | None, **config: object) -> str:
        return self._text_of(self._call(messages, timeout, **config))

    def _call(
        self,
        messages: list[Message],
        timeout: float | None,
        *,
        cached_content: str | None = None,
        **config: object,
    ) -> types.GenerateContentResponse:
        system, contents = _to_contents(messages)
        if cached_content:  # the cache holds the system instruction; the API refuses both
            system = ""
        seconds = self.timeout_seconds if timeout is None else timeout
        generate_config = types.GenerateContentConfig(
            system_instruction=system or None,
            cached_content=cached_content or None,
            http_options=types.HttpOptions(
                timeout=max(1, int(seconds * 1000)),
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
            **config,
        )
        started = time.monotonic()
        try:
            with _translated_errors(seconds):
                response = self._client.models.generate_content(
                    model=self.model, contents=contents, config=generate_config
                )
        except LLMError as exc:
            report_failure(self.model_id, messages, exc, time.monotonic() - started)
            raise
        report_usage(
            self.model_id,
            messages,
            _usage_of(response, cached_content),
            seconds=time.monotonic() - started,
        )
        return response

    def stream_with_usage(
        self,
        messages: list[Message],
        *,
        on_text: Callable[[str], None] | None = None,
        options: GenerationOptions | None = None,
        cached_content: str | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """`complete_with_usage`, streamed with ``generate_content_stream`` (issue 25):
        each chunk's text goes to ``on_text`` as it arrives; the usage metadata of the
        last chunk is recorded. One attempt: a failure before the first chunk is
        retryable as usual, after it `StreamInterruptedError`; the whole answer is
        bounded by the timeout (a stall by the transport's read timeout)."""
        config: dict[str, object] = {}
        if options is not None and options.temperature is not None:
            config["temperature"] = options.temperature
        if options is not None and options.max_output_tokens is not None:
            config["max_output_tokens"] = options.max_output_tokens
        system, contents = _to_contents(messages)
        if cached_content:
            system = ""
        seconds = self.timeout_seconds if timeout is None else timeout
        generate_config = self._config(system, cached_content, seconds, config)
        guard = StreamGuard(model=self.model_id, seconds=seconds, on_text=on_text)
        last: types.GenerateContentResponse | None = None
        usage_seen: types.GenerateContentResponse | None = None
        stream = None
        try:
            with _translated_errors(seconds):
                stream = self._client.models.generate_content_stream(
                    model=self.model, contents=contents, config=generate_config
                )
                for chunk in stream:
                    last = chunk
                    if chunk.usage_metadata is not None:
                        usage_seen = chunk
                    self._check_blocked(chunk)
                    guard.piece(_chunk_text(chunk))
            if last is None:
                raise InvalidOutputError("Gemini streamed no chunk.")
        except LLMError as exc:
            failure = guard.failed(exc)
            report_failure(self.model_id, messages, failure, time.monotonic() - guard.started)
            if failure is exc:
                raise
            raise failure from exc
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        usage = _usage_of(usage_seen or last, cached_content)
        report_usage(self.model_id, messages, usage, seconds=time.monotonic() - guard.started)
        if not guard.text.strip():
            raise InvalidOutputError("Gemini returned an empty answer.")
        return Completion(text=guard.text, usage=usage)

    @staticmethod
    def _config(
        system: str, cached_content: str | None, seconds: float, config: dict
    ) -> types.GenerateContentConfig:
        return types.GenerateContentConfig(
            system_instruction=system or None,
            cached_content=cached_content or None,
            http_options=types.HttpOptions(
                timeout=max(1, int(seconds * 1000)),
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
            **config,
        )

    def create_cache(self, *, system: str, ttl_seconds: int, timeout: float | None = None) -> str:
        """Cache ``system`` (the frozen prefix) for ``ttl_seconds``; return the cache's name."""
        seconds = self.timeout_seconds if timeout is None else timeout
        with _translated_errors(seconds):
            cached = self._client.caches.create(
                model=self.model,
                config=types.CreateCachedContentConfig(
                    system_instruction=system,
                    ttl=f"{int(ttl_seconds)}s",
                    http_options=types.HttpOptions(
                        timeout=max(1, int(seconds * 1000)),
                        retry_options=types.HttpRetryOptions(attempts=1),
                    ),
                ),
            )
        if not cached.name:
            raise InvalidOutputError("Gemini created a cached content without a name.")
        return cached.name

    def complete_with_usage(
        self,
        messages: list[Message],
        *,
        options: GenerationOptions | None = None,
        cached_content: str | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """``complete`` plus the usage metadata, sampling settings and an optional cache."""
        config: dict[str, object] = {}
        if options is not None and options.temperature is not None:
            config["temperature"] = options.temperature
        if options is not None and options.max_output_tokens is not None:
            config["max_output_tokens"] = options.max_output_tokens
        response = self._call(messages, timeout, cached_content=cached_content, **config)
        text = self._text_of(response)
        return Completion(text=text, usage=_usage_of(response, cached_content))

    @staticmethod
    def _check_blocked(response: types.GenerateContentResponse) -> None:
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            raise PermanentLLMError(f"Gemini blocked the prompt: {feedback.block_reason}")
        candidates = response.candidates or []
        if candidates:
            reason = candidates[0].finish_reason
            name = getattr(reason, "value", reason)
            if name in _BLOCKED_FINISH:
                raise PermanentLLMError(f"Gemini stopped the answer: {name}")

    @classmethod
    def _text_of(cls, response: types.GenerateContentResponse) -> str:
        cls._check_blocked(response)
        try:
            text = response.text
        except (ValueError, AttributeError) as exc:  # pragma: no cover - SDK specific
            raise InvalidOutputError(f"Gemini answer has no text: {exc}") from exc
        if not text or not text.strip():
            raise InvalidOutputError("Gemini returned an empty answer.")
        return text

    def complete(
        self,
        messages: list[Message],
        *,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> str:
        return self._generate(
            messages, timeout, max_output_tokens=max_output_tokens or MEMORY_MAX_OUTPUT_TOKENS
        )

    def complete_json(
        self,
        messages: list[Message],
        *,
        schema: dict,
        timeout: float | None = None,
        max_output_tokens: int | None = None,
    ) -> dict:
        text = self._generate(
            messages,
            timeout,
            response_mime_type="application/json",
            response_schema=schema,
            max_output_tokens=max_output_tokens or MEMORY_MAX_OUTPUT_TOKENS,
        )
        return validate_json(parse_json_object(text), schema)


def _chunk_text(chunk: types.GenerateContentResponse) -> str:
    """The text parts of one streamed chunk (thought parts left out, as `.text` does)."""
    pieces = []
    for candidate in (chunk.candidates or [])[:1]:
        content = candidate.content
        for part in (content.parts if content is not None else None) or []:
            if part.text and not part.thought:
                pieces.append(part.text)
    return "".join(pieces)


def _usage_of(response: types.GenerateContentResponse, cached_content: str | None) -> Usage:
    meta = response.usage_metadata
    return Usage(
        tokens_in=int(getattr(meta, "prompt_token_count", 0) or 0),
        tokens_cached=int(getattr(meta, "cached_content_token_count", 0) or 0),
        tokens_out=int(getattr(meta, "candidates_token_count", 0) or 0),
        cache_name=cached_content or "",
    )
