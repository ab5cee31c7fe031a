"""Any OpenAI-compatible chat server (LM Studio, Ollama, llama.cpp, vLLM, OpenAI).

``max_retries=0`` turns off the SDK's retries: ``call_with_retries`` owns that policy.
JSON asks for ``response_format={"type": "json_schema", …}`` (structured output: OpenAI,
vLLM, llama.cpp, LM Studio) and, when a server refuses that with a 400/422 naming it, falls back
to ``{"type": "json_object"}`` (the widest-supported mode) and remembers the refusal for
that server and model. Either way the schema is also spelled out in a system note, and
our own validation follows, since a server may honour the mode loosely.
"""

from __future__ import annotations

import json
import time

import openai

from context_engine.llm.base import (
    InvalidOutputError,
    LLMError,
    LLMTimeoutError,
    Message,
    PermanentLLMError,
    TransientLLMError,
    context_length_error,
    parse_json_object,
    schema_instruction,
    validate_json,
)
from context_engine.llm.usage import (
    Completion,
    GenerationOptions,
    Usage,
    report_failure,
    report_usage,
)

_TRANSIENT_STATUS = {408, 409, 429}
_REFUSED = (400, 404, 415, 422)  # how servers say "I do not know json_schema"
# (base_url, model) pairs that refused json_schema once: no second refusal per call.
_NO_JSON_SCHEMA: set[tuple[str, str]] = set()


class _Refused(PermanentLLMError):
    """A client error (4xx) on the request's *shape*, which a fallback may fix."""


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
        try:
            return self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                timeout=seconds,
                **extra,  # type: ignore[arg-type]
            )
        except openai.APITimeoutError as exc:
            raise LLMTimeoutError(f"{self.model_id} timed out after {seconds:g}s") from exc
        except openai.APIConnectionError as exc:
            raise TransientLLMError(f"{self.model_id} connection failed: {exc}") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            said = f"{self.model_id} HTTP {status}: {exc.message}"
            body = json.dumps(exc.body, default=str) if exc.body is not None else ""
            too_long = context_length_error(f"{exc.message} {body}")
            if too_long is not None and status < 500:
                raise too_long.restated(said) from exc
            if status in _TRANSIENT_STATUS or status >= 500:
                raise TransientLLMError(said) from exc
            lowered = str(exc.message).lower()
            if (
                status in _REFUSED
                and "response_format" in extra
                and any(word in lowered for word in ("json_schema", "response_format", "schema"))
            ):
                raise _Refused(said) from exc
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

    def complete(self, messages: list[Message], *, timeout: float | None = None) -> str:
        return self._chat(list(messages), timeout)

    def complete_json(
        self, messages: list[Message], *, schema: dict, timeout: float | None = None
    ) -> dict:
        note = {"role": "system", "content": schema_instruction(schema)}
        asked = [note, *messages]
        server = (self.base_url, self.model)
        if server not in _NO_JSON_SCHEMA:
            structured = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": False},
            }
            try:
                text = self._chat(asked, timeout, response_format=structured)
                return validate_json(parse_json_object(text), schema)
            except _Refused:
                _NO_JSON_SCHEMA.add(server)
        text = self._chat(asked, timeout, response_format={"type": "json_object"})
        return validate_json(parse_json_object(text), schema)


def _usage_of(response: object) -> Usage:
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
        tokens_cached=int(getattr(details, "cached_tokens", 0) or 0),
        tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
    )
