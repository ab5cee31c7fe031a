"""The OpenAI chat completions API as the openai SDK (and LM Studio, Ollama…) speak it.

``POST /v1/chat/completions`` with ``{"model", "messages", "response_format"?}``; the
client's ``base_url`` is ``http://127.0.0.1:PORT/v1``. Errors use OpenAI's
``{"error": {"message", "type", "param", "code"}}`` shape.

Automatic prefix caching as OpenAI does it: ``usage.prompt_tokens_details.cached_tokens``
counts the tokens of the longest prefix this request shares with an earlier request to
the same model (0 below ``cache_min_tokens``; the real service starts at 1024).
"""

from __future__ import annotations

from typing import Any

from tests.standins.server import RecordedRequest, StandinServer, standin_tokens

_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _common_prefix(a: str, b: str) -> str:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return a[:size]


def _wire_prompt(data: Any) -> str:
    """The messages as the server would tokenise them, roles included, in order."""
    if not isinstance(data, dict):
        return ""
    return "".join(
        f"{m.get('role')}\x00{_content_text(m.get('content'))}\x00"
        for m in data.get("messages") or []
        if isinstance(m, dict)
    )


class OpenAIStandin(StandinServer):
    api_name = "openai"
    cache_min_tokens = 0

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def add_usage(self, body: dict, record: RecordedRequest, text: str) -> None:
        current = _wire_prompt(record.json)
        shared = ""
        for earlier in self.requests:
            if earlier is record:
                break  # only requests that came before this one
            if earlier.model == record.model and earlier.json is not None:
                common = _common_prefix(current, _wire_prompt(earlier.json))
                shared = max(shared, common, key=len)
        cached = len(shared.encode()) // 4  # whole tokens only
        if cached < self.cache_min_tokens:
            cached = 0
        prompt = standin_tokens(current)
        out = standin_tokens(text)
        body["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": out,
            "total_tokens": prompt + out,
            "prompt_tokens_details": {"cached_tokens": min(cached, prompt)},
        }

    def route(self, path: str) -> str | None:
        return "chat" if path in ("/v1/chat/completions", "/chat/completions") else None

    def invalid(self, data: Any, headers: dict[str, str]) -> tuple[int, str] | None:
        if not isinstance(data, dict) or not isinstance(data.get("model"), str):
            return 400, "you must provide a model parameter"
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            return 400, "'messages' must be a non-empty array"
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in (
                "system",
                "user",
                "assistant",
                "developer",
            ):
                return 400, "Invalid message role"
        return None

    def prompt_of(self, data: dict) -> str:
        return "\n".join(
            _content_text(m.get("content"))
            for m in data.get("messages") or []
            if isinstance(m, dict)
        )

    def json_request(self, data: dict) -> tuple[bool, dict | None]:
        response_format = data.get("response_format") or {}
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        schema = None
        if kind == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema")
        return kind in ("json_object", "json_schema"), schema

    def model_of(self, routed: str, data: Any) -> str:
        model = data.get("model") if isinstance(data, dict) else None
        return model if isinstance(model, str) else routed

    def success_body(self, text: str, model: str) -> dict:
        return {
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def error_body(self, status: int, message: str) -> dict:
        return {
            "error": {
                "message": message,
                "type": _TYPES.get(
                    status, "server_error" if status >= 500 else "invalid_request_error"
                ),
                "param": None,
                "code": None,
            }
        }

    def blocked_body(self, model: str) -> dict:
        body = self.success_body("", model)
        body["choices"][0]["message"]["content"] = None
        body["choices"][0]["finish_reason"] = "content_filter"
        return body
