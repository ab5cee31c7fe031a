"""The Gemini REST API as google-genai 3.x sends it.

``POST /{version}/models/{model}:generateContent`` (the SDK uses ``v1`` by default,
``v1beta`` when asked), key in ``x-goog-api-key``, body ``{"contents": [...],
"systemInstruction": {...}, "generationConfig": {"responseMimeType", "responseSchema"}}``.
Errors use Google's ``{"error": {"code", "message", "status"}}`` shape.
"""

from __future__ import annotations

import re
from typing import Any

from tests.standins.server import StandinServer

_PATH = re.compile(r"^/(?P<version>v1(?:alpha|beta)?\d*)/models/(?P<model>[^/:]+):generateContent$")
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
        return None

    def prompt_of(self, data: dict) -> str:
        pieces = [_parts_text(data.get("systemInstruction"))]
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
