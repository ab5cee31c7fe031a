"""The OpenAI chat completions API as the openai SDK (and LM Studio, Ollama…) speak it.

``POST /v1/chat/completions`` with ``{"model", "messages", "response_format"?}``; the
client's ``base_url`` is ``http://127.0.0.1:PORT/v1``. Errors use OpenAI's
``{"error": {"message", "type", "param", "code"}}`` shape.

``GET /v1/models`` lists ``served`` (with vLLM's ``max_model_len`` when ``flavour`` is
``vllm``). ``flavour`` also adds the server's own metadata endpoint and its words for
"too long": ``llamacpp`` — ``GET /props`` (``default_generation_settings.n_ctx``) and
``exceed_context_size_error``; ``ollama`` — ``POST /api/show`` (``model_info`` and
``parameters``); ``lmstudio`` — ``GET /api/v0/models/NAME``; ``openai``/``vllm`` —
"maximum context length is N tokens". ``context_window`` (the server) enforces the window.

Automatic prefix caching as OpenAI does it: ``usage.prompt_tokens_details.cached_tokens``
counts the tokens of the longest prefix this request shares with an earlier request to
the same model (0 below ``cache_min_tokens``; the real service starts at 1024).
"""

from __future__ import annotations

import json
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

    def __init__(self, *, flavour: str = "openai", **kwargs: Any):
        super().__init__(**kwargs)
        self.flavour = flavour
        self.served: list[str] = ["llama3.1", "local", "qwen"]
        self.required_key: str | None = None  # set: other keys get a 401
        self.ollama_num_ctx: int | None = None  # a Modelfile's num_ctx parameter

    # -- metadata ------------------------------------------------------------------------
    def side_request(
        self, method: str, path: str, data: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, Any] | None:
        window = self.context_window or 8192
        if method == "GET" and path in ("/v1/models", "/models"):
            wrong = self.invalid({"model": "m", "messages": [{"role": "user"}]}, headers or {})
            if wrong is not None and wrong[0] == 401:
                return 401, self.error_body(*wrong)
            entries = []
            for name in self.served:
                entry = {"id": name, "object": "model", "created": 0, "owned_by": self.flavour}
                if self.flavour == "vllm":
                    entry["max_model_len"] = window
                entries.append(entry)
            return 200, {"object": "list", "data": entries}
        if self.flavour == "llamacpp" and method == "GET" and path == "/props":
            return 200, {
                "default_generation_settings": {"n_ctx": window, "params": {"n_predict": -1}},
                "total_slots": 1,
                "model_path": "/models/standin.gguf",
            }
        if self.flavour == "ollama" and method == "POST" and path == "/api/show":
            name = (data or {}).get("model") or (data or {}).get("name")
            if name not in self.served:
                return 404, {"error": f"model '{name}' not found"}
            parameters = f"num_ctx {self.ollama_num_ctx}\n" if self.ollama_num_ctx else ""
            return 200, {
                "parameters": parameters + 'stop "<|im_end|>"',
                "model_info": {"general.architecture": "llama", "llama.context_length": window},
            }
        if self.flavour == "lmstudio" and method == "GET" and path.startswith("/api/v0/models/"):
            name = path.removeprefix("/api/v0/models/")
            if name not in self.served:
                return 404, {"error": "Model not found"}
            return 200, {
                "id": name,
                "max_context_length": window * 4,
                "loaded_context_length": window,
            }
        return None

    def too_long_body(self, prompt_tokens: int, window: int) -> dict:
        if self.flavour == "llamacpp":
            return {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt_tokens,
                    "n_ctx": window,
                }
            }
        body = self.error_body(
            400,
            f"This model's maximum context length is {window} tokens. However, your "
            f"messages resulted in {prompt_tokens} tokens. Please reduce the length.",
        )
        body["error"]["code"] = "context_length_exceeded"
        return body

    def requested_output(self, data: Any) -> int:
        value = data.get("max_tokens") if isinstance(data, dict) else None
        return value if isinstance(value, int) else 0

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
        if self.required_key and headers.get("authorization") != f"Bearer {self.required_key}":
            return 401, "Incorrect API key provided."
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

    def wants_stream(self, path: str, data: Any) -> bool:
        return isinstance(data, dict) and data.get("stream") is True

    def stream_events(self, pieces: list[str], record: RecordedRequest, text: str) -> list[bytes]:
        """``chat.completion.chunk`` events, a final one with ``finish_reason``, the usage
        chunk (empty ``choices``) when ``stream_options.include_usage``, then ``[DONE]``."""
        model = record.model

        def chunk(delta: dict, finish: str | None = None, **extra: Any) -> bytes:
            body = {
                "id": "chatcmpl-standin",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            return b"data: " + json.dumps(body).encode() + b"\n\n"

        events = [chunk({"role": "assistant", "content": pieces[0]})]
        events += [chunk({"content": piece}) for piece in pieces[1:]]
        events.append(chunk({}, "stop"))
        options = (record.json or {}).get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage"):
            body: dict = {}
            self.add_usage(body, record, text)
            usage = json.dumps(
                {
                    "id": "chatcmpl-standin",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [],
                    "usage": body["usage"],
                }
            )
            events.append(b"data: " + usage.encode() + b"\n\n")
        events.append(b"data: [DONE]\n\n")
        return events

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
