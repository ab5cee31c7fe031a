"""LLM clients behind one interface: Gemini, OpenAI-compatible servers, offline.

Pick one with ``client_for(model_id, settings)``; call ``complete`` or ``complete_json``;
wrap calls in ``call_with_retries`` and fall back on any ``LLMError``.
"""

from context_engine.llm.base import (
    ContextLengthError,
    InvalidOutputError,
    LLMClient,
    LLMError,
    LLMTimeoutError,
    Message,
    PermanentLLMError,
    StreamGuard,
    StreamInterruptedError,
    TransientLLMError,
    call_status,
    call_with_retries,
    is_offline,
    parse_json_object,
    validate_json,
)
from context_engine.llm.factory import (
    GEMINI_DEFAULT_MODEL,
    OFFLINE_MODEL,
    Endpoint,
    LLMSettings,
    ProviderNotConfigured,
    UnknownProviderError,
    client_for,
    client_for_endpoint,
    default_summarizer_model,
    endpoint,
    is_known_model_id,
)
from context_engine.llm.offline import OfflineClient, offline_usage
from context_engine.llm.usage import (
    MAX_OUTPUT_TOKENS_LIMIT,
    TEMPERATURE_MAX,
    CallRecord,
    Completion,
    GenerationOptions,
    Usage,
    collecting_usage,
    prefix_fingerprints,
    prefix_hash,
    prompt_bytes,
    report_failure,
    stable_share,
)

__all__ = [
    "GEMINI_DEFAULT_MODEL",
    "MAX_OUTPUT_TOKENS_LIMIT",
    "OFFLINE_MODEL",
    "TEMPERATURE_MAX",
    "CallRecord",
    "Completion",
    "ContextLengthError",
    "Endpoint",
    "GenerationOptions",
    "InvalidOutputError",
    "LLMClient",
    "LLMError",
    "LLMSettings",
    "LLMTimeoutError",
    "Message",
    "OfflineClient",
    "PermanentLLMError",
    "ProviderNotConfigured",
    "StreamGuard",
    "StreamInterruptedError",
    "TransientLLMError",
    "UnknownProviderError",
    "Usage",
    "call_status",
    "call_with_retries",
    "client_for",
    "client_for_endpoint",
    "collecting_usage",
    "default_summarizer_model",
    "endpoint",
    "is_known_model_id",
    "is_offline",
    "offline_usage",
    "parse_json_object",
    "prefix_fingerprints",
    "prefix_hash",
    "prompt_bytes",
    "report_failure",
    "stable_share",
    "validate_json",
]


def __getattr__(name: str) -> object:
    """``GeminiClient`` / ``OpenAICompatibleClient`` import their SDK only when asked for."""
    if name == "GeminiClient":
        from context_engine.llm.gemini import GeminiClient

        return GeminiClient
    if name == "OpenAICompatibleClient":
        from context_engine.llm.openai_compat import OpenAICompatibleClient

        return OpenAICompatibleClient
    raise AttributeError(name)
