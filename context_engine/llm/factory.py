"""Model id → client. The only place that builds clients; the ids are `providers`'.

``offline`` is the only id that answers offline. Every other id reaches its server or
raises: an unknown id is `UnknownProviderError`, a known one whose provider this process
cannot reach (Gemini without a key, ``openai:`` without a base URL) is
`ProviderNotConfigured` — both ValueError, both naming what to set — so an agent never
plays offline under another model's name. Callers that may fall back (memory workers,
the arena's judge) catch it and say why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from context_engine.llm.base import LLMClient
from context_engine.llm.offline import OfflineClient
from context_engine.llm.providers import (
    Endpoint,
    ProviderNotConfigured,
    UnknownProviderError,
    endpoint_for,
    parse_model_id,
)
from context_engine.llm.providers import is_known_model_id as is_known_model_id

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
    cpu_timeout_seconds: float = 300.0  # the CPU presets: lmstudio, ollama, llamacpp

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LLMSettings:
        """Build from ``GEMINI_API_KEY``/``GOOGLE_API_KEY``, ``GEMINI_BASE_URL``,
        ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``LLM_TIMEOUT_SECONDS`` and
        ``LLM_CPU_TIMEOUT_SECONDS``.

        Empty strings count as unset. A bad timeout raises ValueError naming the variable.
        """

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def seconds(name: str, default: float) -> float:
            raw = get(name)
            try:
                value = float(raw) if raw else default
            except ValueError as exc:
                raise ValueError(f"{name} must be a number, got {raw!r}") from exc
            if value <= 0:
                raise ValueError(f"{name} must be positive")
            return value

        timeout = seconds("LLM_TIMEOUT_SECONDS", 30.0)
        cpu_timeout = seconds("LLM_CPU_TIMEOUT_SECONDS", 300.0)
        return cls(
            gemini_api_key=get("GEMINI_API_KEY") or get("GOOGLE_API_KEY"),
            gemini_base_url=get("GEMINI_BASE_URL"),
            openai_base_url=get("OPENAI_BASE_URL"),
            openai_api_key=get("OPENAI_API_KEY"),
            timeout_seconds=timeout,
            cpu_timeout_seconds=cpu_timeout,
        )


def endpoint(
    model_id: str,
    settings: LLMSettings,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
) -> Endpoint:
    """Where ``model_id`` is served, from a participant's own settings over the process's.
    Raises UnknownProviderError / ProviderNotConfigured."""
    return endpoint_for(
        model_id,
        gemini_api_key=settings.gemini_api_key,
        gemini_base_url=settings.gemini_base_url,
        openai_base_url=settings.openai_base_url,
        openai_api_key=settings.openai_api_key,
        timeout_seconds=settings.timeout_seconds,
        cpu_timeout_seconds=settings.cpu_timeout_seconds,
        base_url=base_url,
        api_key=api_key,
        timeout=timeout,
    )


def client_for(
    model_id: str,
    settings: LLMSettings,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
) -> LLMClient:
    """The client for ``model_id`` (see `providers` for the forms). ``offline`` is the
    offline client; anything else reaches its server or raises ValueError
    (`UnknownProviderError`, `ProviderNotConfigured`) naming what is missing."""
    return client_for_endpoint(
        endpoint(model_id, settings, base_url=base_url, api_key=api_key, timeout=timeout)
    )


@lru_cache(maxsize=64)
def client_for_endpoint(where: Endpoint) -> LLMClient:
    """One client per endpoint, cached so a worker reuses its HTTP connection pool."""
    if where.offline:
        return OfflineClient()
    if where.api == "gemini":
        from context_engine.llm.gemini import GeminiClient

        return GeminiClient(
            model=where.model,
            api_key=where.api_key or "",
            base_url=where.base_url,
            timeout_seconds=where.timeout_seconds,
            model_id=where.model_id,
        )
    from context_engine.llm.openai_compat import OpenAICompatibleClient

    return OpenAICompatibleClient(
        model=where.model,
        base_url=where.base_url or "",
        api_key=where.api_key,
        timeout_seconds=where.timeout_seconds,
        model_id=where.model_id,
        cpu=where.cpu,
    )


__all__ = [
    "GEMINI_DEFAULT_MODEL",
    "OFFLINE_MODEL",
    "OPENAI_DEFAULT_MODEL",
    "Endpoint",
    "LLMSettings",
    "ProviderNotConfigured",
    "UnknownProviderError",
    "client_for",
    "client_for_endpoint",
    "default_summarizer_model",
    "endpoint",
    "is_known_model_id",
    "parse_model_id",
]


def default_summarizer_model(settings: LLMSettings) -> str:
    """``gemini-2.5-flash`` with a Gemini key, else ``openai:default`` with a base URL,
    else ``offline``."""
    if settings.gemini_api_key:
        return GEMINI_DEFAULT_MODEL
    if settings.openai_base_url:
        return OPENAI_DEFAULT_MODEL
    return OFFLINE_MODEL
