"""Model ids pick clients; only ``offline`` plays offline, everything else reaches its
server or says what is missing."""

from __future__ import annotations

import pytest

from context_engine.llm import (
    LLMSettings,
    OfflineClient,
    ProviderNotConfigured,
    client_for,
    default_summarizer_model,
    endpoint,
    is_known_model_id,
)
from context_engine.llm.gemini import GeminiClient
from context_engine.llm.openai_compat import OpenAICompatibleClient

GEMINI = LLMSettings(gemini_api_key="k")
LOCAL = LLMSettings(openai_base_url="http://127.0.0.1:9/v1")
BOTH = LLMSettings(gemini_api_key="k", openai_base_url="http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("model_id", "llm_settings", "expected"),
    [
        ("gemini-2.5-flash", GEMINI, GeminiClient),
        ("openai:llama3.1", LOCAL, OpenAICompatibleClient),
        ("lmstudio:qwen2.5-7b", LLMSettings(), OpenAICompatibleClient),
        ("ollama:llama3.2", LLMSettings(), OpenAICompatibleClient),
        ("llamacpp:smollm2", LLMSettings(), OpenAICompatibleClient),
        ("vllm:mistral", LLMSettings(), OpenAICompatibleClient),
        ("offline", BOTH, OfflineClient),
        ("offline", LLMSettings(), OfflineClient),
    ],
)
def test_a_model_id_picks_its_client(model_id, llm_settings, expected):
    assert type(client_for(model_id, llm_settings)) is expected


@pytest.mark.parametrize(
    ("model_id", "llm_settings", "missing"),
    [
        ("gemini-2.5-flash", LLMSettings(), "GEMINI_API_KEY"),
        ("gemini-2.5-flash", LOCAL, "GEMINI_API_KEY"),
        ("openai:llama3.1", GEMINI, "OPENAI_BASE_URL"),
        ("openai:llama3.1", LLMSettings(), "OPENAI_BASE_URL"),
    ],
)
def test_a_provider_not_configured_here_never_plays_offline_under_its_name(
    model_id, llm_settings, missing
):
    with pytest.raises(ProviderNotConfigured, match=missing):
        client_for(model_id, llm_settings)


@pytest.mark.parametrize(
    ("model_id", "base_url", "timeout"),
    [
        ("lmstudio:qwen", "http://127.0.0.1:1234/v1", 300.0),
        ("ollama:llama3.2", "http://127.0.0.1:11434/v1", 300.0),
        ("llamacpp:smollm2", "http://127.0.0.1:8080/v1", 300.0),
        ("vllm:mistral", "http://127.0.0.1:8000/v1", 30.0),
        ("openai:x", "http://127.0.0.1:9/v1", 30.0),
    ],
)
def test_presets_give_a_server_and_cpu_presets_a_longer_timeout(model_id, base_url, timeout):
    where = endpoint(model_id, LOCAL)
    assert (where.base_url, where.timeout_seconds, where.model) == (
        base_url,
        timeout,
        model_id.split(":", 1)[1],
    )
    assert where.cpu is (timeout == 300.0)


def test_a_participants_own_server_key_and_timeout_win_over_the_process():
    where = endpoint(
        "ollama:llama3.2",
        LOCAL,
        base_url="http://127.0.0.1:7000/v1",
        api_key="own",
        timeout=42,
    )
    assert (where.base_url, where.api_key, where.timeout_seconds) == (
        "http://127.0.0.1:7000/v1",
        "own",
        42.0,
    )


def test_the_process_keys_are_never_sent_to_a_participants_own_server():
    settings = LLMSettings(
        gemini_api_key="env-gemini", openai_base_url="http://127.0.0.1:9/v1", openai_api_key="e"
    )
    assert endpoint("openai:x", settings).api_key == "e"
    assert endpoint("openai:x", settings, base_url="http://127.0.0.1:5/v1").api_key is None
    assert endpoint("ollama:x", settings).api_key is None
    with pytest.raises(ProviderNotConfigured, match="key"):
        endpoint("gemini-2.5-flash", settings, base_url="http://127.0.0.1:5")


def test_the_openai_prefix_is_stripped_from_the_model_name():
    client = client_for("openai:llama3.1", LOCAL)
    assert client.model == "llama3.1"


@pytest.mark.parametrize(
    "model_id",
    ["gpt-4o", "human", "openai:", "gemini-", "", "smollm2", "ollama3:x", "offline:x", " offline"],
)
def test_unknown_model_ids_are_refused_with_their_name(model_id):
    assert not is_known_model_id(model_id)
    with pytest.raises(ValueError, match="Unknown model id"):
        client_for(model_id, BOTH)


def test_the_summarizer_defaults_to_gemini_flash_when_a_key_exists():
    assert default_summarizer_model(BOTH) == "gemini-2.5-flash"
    assert default_summarizer_model(LOCAL).startswith("openai:")
    assert default_summarizer_model(LLMSettings()) == "offline"


def test_settings_come_from_the_environment_with_google_key_as_alias():
    settings = LLMSettings.from_env(
        {"GOOGLE_API_KEY": "g", "OPENAI_BASE_URL": " http://x/v1 ", "LLM_TIMEOUT_SECONDS": "5"}
    )
    assert settings == LLMSettings(
        gemini_api_key="g", openai_base_url="http://x/v1", timeout_seconds=5.0
    )
    assert LLMSettings.from_env({"LLM_CPU_TIMEOUT_SECONDS": "900"}).cpu_timeout_seconds == 900
    both_keys = LLMSettings.from_env({"GEMINI_API_KEY": "a", "GOOGLE_API_KEY": "b"})
    assert both_keys.gemini_api_key == "a"
    assert LLMSettings.from_env({"GEMINI_API_KEY": ""}) == LLMSettings()


@pytest.mark.parametrize("value", ["soon", "0", "-3"])
def test_a_bad_timeout_names_the_variable(value):
    with pytest.raises(ValueError, match="LLM_TIMEOUT_SECONDS"):
        LLMSettings.from_env({"LLM_TIMEOUT_SECONDS": value})
