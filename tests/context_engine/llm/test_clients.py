"""The real google-genai and openai SDKs, over real HTTP, against the stand-in servers."""

from __future__ import annotations

import logging
import time

import pytest

from context_engine.llm import (
    InvalidOutputError,
    LLMSettings,
    PermanentLLMError,
    TransientLLMError,
    client_for,
)
from context_engine.llm.base import MEMORY_MAX_OUTPUT_TOKENS
from tests.standins import Reply

SCHEMA = {
    "type": "object",
    "properties": {"definition": {"type": "string"}, "confidence": {"type": "number"}},
    "required": ["definition"],
}
MESSAGES = [
    {"role": "system", "content": "You keep a glossary."},
    {"role": "user", "content": "Define void-chisel."},
    {"role": "assistant", "content": "Which sentence?"},
    {"role": "user", "content": "Thorin lifts the void-chisel."},
]

OUTCOMES = [
    ("429", TransientLLMError),
    ("500", TransientLLMError),
    ("disconnect", TransientLLMError),
    ("400", PermanentLLMError),
    ("safety", PermanentLLMError),
    ("malformed_json", InvalidOutputError),
    ("missing_heading", InvalidOutputError),
    ("garbage", InvalidOutputError),
]


@pytest.fixture(params=["gemini", "openai"])
def backend(request):
    """(client, stand-in) for each backend, so every behaviour is checked on both SDKs."""
    if request.param == "gemini":
        server = request.getfixturevalue("gemini_standin")
        settings = request.getfixturevalue("gemini_settings")
        return client_for("gemini-2.5-flash", settings), server
    server = request.getfixturevalue("openai_standin")
    settings = request.getfixturevalue("openai_settings")
    return client_for("openai:llama3.1", settings), server


def test_a_good_answer_comes_back_as_validated_json(backend):
    client, server = backend
    data = client.complete_json(MESSAGES, schema=SCHEMA)
    assert "stand-in" in data["definition"]
    assert len(server.requests) == 1


def test_plain_completion_returns_the_model_text(backend):
    client, server = backend
    assert "stand-in" in client.complete(MESSAGES)
    assert server.requests[0].wants_json is False


@pytest.mark.parametrize(("behaviour", "error"), OUTCOMES)
def test_each_fault_maps_to_its_error_kind_with_no_sdk_retry(backend, behaviour, error):
    client, server = backend
    server.script([behaviour])
    with pytest.raises(error):
        client.complete_json(MESSAGES, schema=SCHEMA)
    # The SDK's own retries are off: exactly one request reached the server.
    assert len(server.requests) == 1
    # The script is consumed; the default (ok) answers the next call.
    assert client.complete_json(MESSAGES, schema=SCHEMA)["definition"]


def test_a_slow_answer_past_the_timeout_is_transient(backend):
    client, server = backend
    server.script(["slow"])
    started = time.monotonic()
    with pytest.raises(TransientLLMError, match="timed out"):
        client.complete(MESSAGES, timeout=0.5)
    assert time.monotonic() - started < server.slow_seconds


def test_a_stopped_server_is_a_transient_connection_error(backend):
    client, server = backend
    server.stop()
    with pytest.raises(TransientLLMError):
        client.complete(MESSAGES)
    server.start()
    assert "stand-in" in client.complete(MESSAGES)


def test_a_wrongly_typed_field_is_invalid_output(backend):
    client, server = backend
    server.script([Reply(text='{"definition": 42}')])
    with pytest.raises(InvalidOutputError, match="definition"):
        client.complete_json(MESSAGES, schema=SCHEMA)


def test_a_json_answer_in_a_code_fence_is_accepted(backend):
    client, server = backend
    server.script([Reply(text='```json\n{"definition": "A chisel that cuts nothing."}\n```')])
    assert client.complete_json(MESSAGES, schema=SCHEMA) == {
        "definition": "A chisel that cuts nothing."
    }


def test_gemini_sends_system_instruction_contents_and_response_schema(
    gemini_standin, gemini_settings
):
    client_for("gemini-2.5-flash", gemini_settings).complete_json(MESSAGES, schema=SCHEMA)
    request = gemini_standin.requests[0]
    assert request.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert request.headers["x-goog-api-key"] == "standin-key"
    body = request.json
    assert body["systemInstruction"]["parts"][0]["text"] == "You keep a glossary."
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["required"] == ["definition"]


def test_openai_asks_for_structured_output_and_spells_out_the_schema(
    openai_standin, openai_settings
):
    client_for("openai:llama3.1", openai_settings).complete_json(MESSAGES, schema=SCHEMA)
    request = openai_standin.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.model == "llama3.1"
    assert request.json["response_format"]["type"] == "json_schema"
    assert request.json["response_format"]["json_schema"]["schema"] == SCHEMA
    assert "JSON Schema" in request.json["messages"][0]["content"]
    assert request.headers["authorization"] == "Bearer not-needed"


def test_a_server_refusing_json_schema_gets_json_mode_and_is_remembered(openai_standin):
    settings = LLMSettings(openai_base_url=openai_standin.base_url)
    openai_standin.script([Reply(status=400, text="response_format json_schema is not supported")])
    answer = client_for("openai:old-llama", settings).complete_json(MESSAGES, schema=SCHEMA)
    assert answer["definition"]
    kinds = [r.json["response_format"]["type"] for r in openai_standin.requests]
    assert kinds == ["json_schema", "json_object"]
    client_for("openai:old-llama", settings).complete_json(MESSAGES, schema=SCHEMA)
    assert openai_standin.requests[-1].json["response_format"] == {"type": "json_object"}


def test_a_500_that_names_the_format_is_a_refusal_and_json_mode_answers(openai_standin, caplog):
    """llama-cpp-python answers ``json_schema`` with a 500 whose body names it."""
    settings = LLMSettings(openai_base_url=openai_standin.base_url)
    said = "Input should be 'text' or 'json_object' (body, response_format, type): json_schema"
    openai_standin.script([Reply(status=500, text=said)])
    with caplog.at_level(logging.WARNING, logger="context_engine.llm.openai_compat"):
        answer = client_for("openai:llama-cpp", settings).complete_json(MESSAGES, schema=SCHEMA)
    assert answer["definition"]
    kinds = [r.json["response_format"]["type"] for r in openai_standin.requests]
    assert kinds == ["json_schema", "json_object"], "one refusal, then JSON mode, no retries"
    assert any("json_object" in r.getMessage() and "500" in r.getMessage() for r in caplog.records)


def test_a_500_about_something_else_is_still_retried_as_transient(openai_standin):
    settings = LLMSettings(openai_base_url=openai_standin.base_url)
    openai_standin.script([Reply(status=500, text="out of memory")])
    with pytest.raises(TransientLLMError):
        client_for("openai:busy", settings).complete_json(MESSAGES, schema=SCHEMA)
    assert [r.json["response_format"]["type"] for r in openai_standin.requests] == ["json_schema"]


def test_every_memory_call_carries_an_output_limit(openai_standin, openai_settings):
    client = client_for("openai:llama3.1", openai_settings)
    client.complete(MESSAGES)
    client.complete_json(MESSAGES, schema=SCHEMA)
    client.complete_json(MESSAGES, schema=SCHEMA, max_output_tokens=300)
    limits = [r.json.get("max_tokens") for r in openai_standin.requests]
    assert limits == [MEMORY_MAX_OUTPUT_TOKENS, MEMORY_MAX_OUTPUT_TOKENS, 300]


def test_openai_sends_the_configured_api_key(openai_standin):
    settings = LLMSettings(openai_base_url=openai_standin.base_url, openai_api_key="sk-local")
    client_for("openai:qwen", settings).complete(MESSAGES)
    assert openai_standin.requests[0].headers["authorization"] == "Bearer sk-local"
