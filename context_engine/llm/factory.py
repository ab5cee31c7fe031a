"""Model id → client. The only place that knows which ids exist and what they need.

With nothing configured every id resolves to the offline client, so the embedded
default (no key, no server) runs end to end; asking for Gemini without a key degrades
the same way instead of failing a background task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from context_engine.llm.base import LLMClient
from context_engine.llm.offline import OfflineClient

GEMINI_DEFAULT_MODEL = "gemini-2.5-flash"
OPENAI_DEFAULT_MODEL = "openai:default"
OFFLINE_MODEL = "offline"


@dataclass(frozen=True)
class LLMSettings:
    """Connection settings, read once from the environment by the Django settings."""

    gemini_api_key: str | None = None
    gemini_base_url: str | None = None
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    timeout_seconds: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LLMSettings:
        """Build from ``GEMINI_API_KEY``/``GOOGLE_API_KEY``, ``GEMINI_BASE_URL``,
        ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``LLM_TIMEOUT_SECONDS``.

        Empty strings count as unset. A bad timeout raises ValueError naming the variable.
        """

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        raw_timeout = get("LLM_TIMEOUT_SECONDS")
        try:
            timeout = float(raw_timeout) if raw_timeout else 30.0
        except ValueError as exc:
            raise ValueError(f"LLM_TIMEOUT_SECONDS must be a number, got {raw_timeout!r}") from exc
        if timeout <= 0:
            raise ValueError("LLM_TIMEOUT_SECONDS must be positive")
        return cls(
            gemini_api_key=get("GEMINI_API_KEY") or get("GOOGLE_API_KEY"),
            gemini_base_url=get("GEMINI_BASE_URL"),
            openai_base_url=get("OPENAI_BASE_URL"),
            openai_api_key=get("OPENAI_API_KEY"),
            timeout_seconds=timeout,
        )


def is_known_model_id(model_id: str) -> bool:
    """Whether ``client_for`` understands this id (for validating experiment config)."""
    return (
        model_id == OFFLINE_MODEL
        or (model_id.startswith("gemini-") and len(model_id) > len("gemini-"))
        or (model_id.startswith("openai:") and len(model_id) > len("openai:"))
    )


@lru_cache(maxsize=32)
def client_for(model_id: str, settings: LLMSettings) -> LLMClient:
    """The client for ``model_id``: ``gemini-*``, ``openai:NAME`` or ``offline``.

    Gemini without a key and ``openai:`` without a base URL fall back to offline.
    Cached per (id, settings) so a worker reuses its HTTP connection pool.
    Unknown ids raise ValueError naming the id.
    """
    from context_engine.llm.gemini import GeminiClient
    from context_engine.llm.openai_compat import OpenAICompatibleClient

    if not is_known_model_id(model_id):
        raise ValueError(
            f"Unknown model id {model_id!r}: use 'gemini-…', 'openai:NAME' or 'offline'."
        )
    if model_id.startswith("gemini-") and settings.gemini_api_key:
        return GeminiClient(
            model=model_id,
            api_key=settings.gemini_api_key,
            base_url=settings.gemini_base_url,
            timeout_seconds=settings.timeout_seconds,
        )
    if model_id.startswith("openai:") and settings.openai_base_url:
        return OpenAICompatibleClient(
            model=model_id.removeprefix("openai:"),
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            timeout_seconds=settings.timeout_seconds,
        )
    return OfflineClient()


def default_summarizer_model(settings: LLMSettings) -> str:
    """``gemini-2.5-flash`` with a Gemini key, else ``openai:default`` with a base URL,
    else ``offline``."""
    if settings.gemini_api_key:
        return GEMINI_DEFAULT_MODEL
    if settings.openai_base_url:
        return OPENAI_DEFAULT_MODEL
    return OFFLINE_MODEL
