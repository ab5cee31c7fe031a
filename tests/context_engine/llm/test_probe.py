"""Asking a server its window and whether it serves a model: llama.cpp /props, Ollama
/api/show, LM Studio, vLLM's model list (openai SDK) and Gemini's models.get (google-genai),
each against its stand-in over real HTTP."""

from __future__ import annotations

import pytest

from context_engine.llm import LLMSettings, endpoint
from context_engine.llm.probe import OLLAMA_DEFAULT_NUM_CTX, ProbeError, check, read_window

SETTINGS = LLMSettings()


def at(server, model_id: str, **kwargs):
    return endpoint(model_id, SETTINGS, base_url=server.base_url, **kwargs)


@pytest.mark.parametrize(
    ("flavour", "model_id", "source"),
    [
        ("llamacpp", "llamacpp:smollm2", "llama.cpp /props n_ctx"),
        ("lmstudio", "lmstudio:qwen", "LM Studio loaded_context_length"),
        ("vllm", "vllm:qwen", "/v1/models max_model_len"),
        ("ollama", "ollama:qwen", "Ollama /api/show context_length"),
    ],
)
def test_each_local_server_says_its_window_its_own_way(local_server, flavour, model_id, source):
    server = local_server(flavour)
    server.context_window = 3072
    window = read_window(at(server, model_id))
    assert (window.tokens, window.source, window.output_shares) == (3072, source, True)


def test_ollama_serves_at_its_default_num_ctx_unless_the_model_sets_one(local_server):
    server = local_server("ollama")
    server.context_window = 32768  # what the model was trained for
    window = read_window(at(server, "ollama:qwen"))
    assert window.tokens == OLLAMA_DEFAULT_NUM_CTX and "num_ctx" in window.source
    server.ollama_num_ctx = 16384
    assert read_window(at(server, "ollama:qwen")).tokens == 16384


def test_gemini_says_its_input_limit_which_the_answer_does_not_share(
    gemini_standin, gemini_settings
):
    gemini_standin.context_window = 200_000
    window = read_window(endpoint("gemini-2.5-flash", gemini_settings))
    assert (window.tokens, window.output_shares) == (200_000, False)
    assert gemini_standin.requests[0].method == "GET"


def test_a_plain_openai_server_does_not_say_and_that_is_no_window(local_server):
    server = local_server("openai")
    assert read_window(at(server, "openai:qwen")) is None


def test_an_unreachable_server_is_a_probe_error_on_the_base_url():
    where = endpoint("llamacpp:smollm2", SETTINGS, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ProbeError) as caught:
        read_window(where, timeout=1)
    assert caught.value.field == "base_url"


def test_a_connection_test_finds_the_model_and_its_window(local_server):
    server = local_server("llamacpp")
    server.context_window = 8192
    found = check(at(server, "llamacpp:qwen"))
    assert found.ok and found.window.tokens == 8192 and "qwen" in found.models
    assert found.server == server.base_url


@pytest.mark.parametrize(
    ("flavour", "model_id", "ok", "field"),
    [
        ("ollama", "ollama:llama3", False, "model"),  # not pulled: Ollama lists all it has
        ("vllm", "vllm:other", False, "model"),
        ("llamacpp", "llamacpp:other", True, ""),  # llama.cpp answers with what it loaded
    ],
)
def test_a_model_the_server_does_not_serve(local_server, flavour, model_id, ok, field):
    found = check(at(local_server(flavour), model_id))
    assert (found.ok, found.field) == (ok, field)
    if ok:
        assert any("other" in warning for warning in found.warnings)
    else:
        assert "qwen" in found.error


def test_a_refused_key_names_the_key_and_an_absent_server_the_base_url(local_server):
    server = local_server("vllm")
    server.required_key = "right"
    assert check(at(server, "vllm:qwen", api_key="wrong")).field == "api_key"
    assert check(at(server, "vllm:qwen", api_key="right")).ok
    gone = endpoint("vllm:qwen", SETTINGS, base_url="http://127.0.0.1:9/v1")
    found = check(gone, timeout=1)
    assert (found.ok, found.field) == (False, "base_url")


def test_gemini_connection_names_an_unknown_model(gemini_standin, gemini_settings):
    assert check(endpoint("gemini-2.5-flash", gemini_settings)).ok
    assert check(endpoint("gemini-9-nope", gemini_settings)).field == "model"
