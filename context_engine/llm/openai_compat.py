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

import openai

from context_engine.llm.base import (
    MEMORY_MAX_OUTPUT_TOKENS,
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

log = logging.getLogger(__name__)

_TRANSIENT_STATUS = {408, 409, 429}
_FORMAT_WORDS = ("json_schema", "response_format")  # a refusal of the format names it
# (base_url, model) pairs that refused json_schema once: no second refusal per call.
_NO_JSON_SCHEMA: set[tuple[str, str]] = set()


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
