"""Model ids pick clients; with nothing configured everything is offline."""

from __future__ import annotations

import pytest

from context_engine.llm import (
    LLMSettings,
    OfflineClient,
    client_for,
    default_summarizer_model,
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
        ("gemini-2.5-flash", LLMSettings(), OfflineClient),
        ("gemini-2.5-flash", LOCAL, OfflineClient),
        ("openai:llama3.1", LOCAL, OpenAICompatibleClient),
        ("openai:llama3.1", GEMINI, OfflineClient),
        ("offline", BOTH, OfflineClient),
    ],
)
def test_a_model_id_picks_its_client(model_id, llm_settings, expected):
    assert type(client_for(model_id, llm_settings)) is expected


def test_the_openai_prefix_is_stripped_from_the_model_name():
    client = client_for("openai:llama3.1", LOCAL)
    assert client.model == "llama3.1"


@pytest.mark.parametrize("model_id", ["gpt-4o", "human", "openai:", "gemini-", ""])
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
    both_keys = LLMSettings.from_env({"GEMINI_API_KEY": "a", "GOOGLE_API_KEY": "b"})
    assert both_keys.gemini_api_key == "a"
    assert LLMSettings.from_env({"GEMINI_API_KEY": ""}) == LLMSettings()


@pytest.mark.parametrize("value", ["soon", "0", "-3"])
def test_a_bad_timeout_names_the_variable(value):
    with pytest.raises(ValueError, match="LLM_TIMEOUT_SECONDS"):
        LLMSettings.from_env({"LLM_TIMEOUT_SECONDS": value})
