"""The Gemini REST API as google-genai 3.x sends it.

``POST /{version}/models/{model}:generateContent`` (the SDK uses ``v1`` by default,
``v1beta`` when asked), key in ``x-goog-api-key``, body ``{"contents": [...],
"systemInstruction": {...}, "generationConfig": {"responseMimeType", "responseSchema"}}``.
Errors use Google's ``{"error": {"code", "message", "status"}}`` shape.

Explicit context caching: ``POST /{version}/cachedContents`` creates a cached content
(``{"model", "systemInstruction", "contents"?, "ttl"}``) named ``cachedContents/…``,
``GET`` / ``DELETE /{version}/cachedContents/{id}`` read and remove it. A generateContent
naming ``cachedContent`` is answered as if the cached system instruction came first, and
its ``usageMetadata.cachedContentTokenCount`` counts the cached tokens; like the real API
it refuses a request that names a cache *and* sends its own ``systemInstruction``.
Set ``cache_create_status`` to make creation fail with that HTTP status.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from typing import Any

from tests.standins.server import RecordedRequest, StandinServer, standin_tokens

_PATH = re.compile(
    r"^/(?P<version>v1(?:alpha|beta)?\d*)/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)
_MODEL = re.compile(r"^/(?P<version>v1(?:alpha|beta)?\d*)/models/(?P<model>[^/:]+)$")
_CACHES = re.compile(r"^/(?P<version>v1(?:alpha|beta)?\d*)/cachedContents(?:/(?P<id>[^/]+))?$")
_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def _parts_text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    return "\n".join(
        str(part.get("text", "")) for part in content.get("parts") or [] if isinstance(part, dict)
    )


class GeminiStandin(StandinServer):
    api_name = "gemini"

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.caches: dict[str, dict] = {}
        self.cache_create_status: int | None = None
        self._cache_ids = itertools.count(1)
        self._cache_lock = threading.Lock()

    def reset(self) -> None:
        super().reset()
        with self._cache_lock:
            self.caches.clear()
            self.cache_create_status = None

    # -- cachedContents ------------------------------------------------------------------
    def side_request(
        self, method: str, path: str, data: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, Any] | None:
        model = _MODEL.match(path)
        if model is not None and method == "GET":
            return self._model_metadata(model.group("model"), headers or {})
        match = _CACHES.match(path)
        if match is None:
            return None
        cache_id = match.group("id")
        with self._cache_lock:
            if method == "POST" and cache_id is None:
                return self._cache_create(data)
            name = f"cachedContents/{cache_id}"
            if cache_id is None or name not in self.caches:
                return 404, self.error_body(404, f"CachedContent not found: {name}")
            if method == "GET":
                return 200, self.caches[name]
            if method == "DELETE":
                del self.caches[name]
                return 200, {}
        return 404, self.error_body(404, f"No route for {method} {path}")

    # -- models.get ------------------------------------------------------------------------
    input_token_limit = 1_048_576
    known_models = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.0-pro")

    def _model_metadata(self, name: str, headers: dict[str, str]) -> tuple[int, Any]:
        if not headers.get("x-goog-api-key"):
            return 403, self.error_body(403, "Method doesn't allow unregistered callers.")
        if name not in self.known_models:
            return 404, self.error_body(404, f"models/{name} is not found for API version")
        limit = self.context_window or self.input_token_limit
        return 200, {
            "name": f"models/{name}",
            "version": "001",
            "displayName": name,
            "inputTokenLimit": limit,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": ["generateContent", "countTokens"],
        }

    def too_long_body(self, prompt_tokens: int, window: int) -> dict:
        return self.error_body(
            400,
            f"The input token count ({prompt_tokens}) exceeds the maximum number of tokens "
            f"allowed ({window}).",
        )

    def _cache_create(self, data: Any) -> tuple[int, Any]:
        if self.cache_create_status is not None:
            return self.cache_create_status, self.error_body(
                self.cache_create_status, "Cache creation failed (stand-in)."
            )
        if not isinstance(data, dict) or not str(data.get("model", "")).startswith("models/"):
            return 400, self.error_body(400, "* CachedContent.model: model is not specified")
        name = f"cachedContents/standin-{next(self._cache_ids)}"
        text = self._cached_text(data)
        self.caches[name] = {
            "name": name,
            "model": data["model"],
            "systemInstruction": data.get("systemInstruction"),
            "contents": data.get("contents") or [],
            "ttl": data.get("ttl", "3600s"),
            "createTime": "2026-01-01T00:00:00Z",
            "updateTime": "2026-01-01T00:00:00Z",
            "expireTime": "2026-01-01T01:00:00Z",
            "usageMetadata": {"totalTokenCount": standin_tokens(text)},
        }
        return 200, self.caches[name]

    @staticmethod
    def _cached_text(cache: dict) -> str:
        pieces = [_parts_text(cache.get("systemInstruction"))]
        pieces += [_parts_text(content) for content in cache.get("contents") or []]
        return "\n".join(piece for piece in pieces if piece)

    def _cache_of(self, data: dict) -> dict | None:
        name = data.get("cachedContent")
        if not name:
            return None
        with self._cache_lock:
            return self.caches.get(str(name))

    def add_usage(self, body: dict, record: RecordedRequest, text: str) -> None:
        data = record.json if isinstance(record.json, dict) else {}
        cache = self._cache_of(data)
        cached = standin_tokens(self._cached_text(cache)) if cache else 0
        prompt = standin_tokens(record.prompt)
        out = standin_tokens(text)
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": out,
            "totalTokenCount": prompt + out,
        }
        if cached:
            usage["cachedContentTokenCount"] = cached
        body["usageMetadata"] = usage

    def route(self, path: str) -> str | None:
        match = _PATH.match(path)
        return match.group("model") if match else None

    def invalid(self, data: Any, headers: dict[str, str]) -> tuple[int, str] | None:
        if not headers.get("x-goog-api-key"):
            return 403, "Method doesn't allow unregistered callers (no API key)."
        if not isinstance(data, dict) or not data.get("contents"):
            return 400, "* GenerateContentRequest.contents: contents is not specified"
        for content in data["contents"]:
            if not isinstance(content, dict) or content.get("role") not in ("user", "model"):
                return 400, "Please use a valid role: user, model."
        if data.get("cachedContent"):
            if self._cache_of(data) is None:
                return 404, f"CachedContent not found: {data['cachedContent']}"
            if data.get("systemInstruction"):
                return 400, (
                    "CachedContent can not be used with GenerateContent request setting "
                    "system_instruction, tools or tool_config."
                )
        return None

    def prompt_of(self, data: dict) -> str:
        cache = self._cache_of(data)
        pieces = [self._cached_text(cache)] if cache else []
        pieces += [_parts_text(data.get("systemInstruction"))]
        pieces += [_parts_text(content) for content in data.get("contents") or []]
        return "\n".join(piece for piece in pieces if piece)

    def json_request(self, data: dict) -> tuple[bool, dict | None]:
        config = data.get("generationConfig") or {}
        wants = config.get("responseMimeType") == "application/json"
        schema = config.get("responseSchema") or config.get("responseJsonSchema")
        return wants, schema if isinstance(schema, dict) else None

    def success_body(self, text: str, model: str) -> dict:
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": max(1, len(text) // 4),
                "totalTokenCount": 10 + max(1, len(text) // 4),
            },
            "modelVersion": model,
        }

    def wants_stream(self, path: str, data: Any) -> bool:
        match = _PATH.match(path)
        return bool(match and match.group("method") == "streamGenerateContent")

    def stream_events(self, pieces: list[str], record: RecordedRequest, text: str) -> list[bytes]:
        """``?alt=sse`` events: one ``GenerateContentResponse`` per piece, the last with
        ``finishReason`` and the usage metadata (as the API sends them)."""
        events = []
        for number, piece in enumerate(pieces):
            body = self.success_body(piece, record.model)
            last = number == len(pieces) - 1
            if last:
                self.add_usage(body, record, text)
            else:
                del body["candidates"][0]["finishReason"]
                del body["usageMetadata"]
            events.append(b"data: " + json.dumps(body).encode() + b"\r\n\r\n")
        return events

    def error_body(self, status: int, message: str) -> dict:
        return {
            "error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}
        }

    def blocked_body(self, model: str) -> dict:
        return {
            "promptFeedback": {"blockReason": "SAFETY"},
            "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 10},
            "modelVersion": model,
        }
