"""A server's "too long" and a slow server, through the real SDKs: never retried
unchanged, recorded with their status, and a timed-out call lets the server stop."""

from __future__ import annotations

import time

import pytest

from context_engine.llm import (
    ContextLengthError,
    LLMSettings,
    LLMTimeoutError,
    call_with_retries,
    client_for,
    collecting_usage,
)
from context_engine.llm.usage import GenerationOptions
from tests.standins.fixtures import STANDIN_TIMEOUT_SECONDS

MESSAGES = [{"role": "user", "content": "The tide turns. " * 200}]  # ~800 stand-in tokens


@pytest.fixture(params=["gemini", "openai", "llamacpp"])
def refusing(request, local_server):
    """(client, server) whose window (500 tokens) the prompt does not fit."""
    if request.param == "gemini":
        server = request.getfixturevalue("gemini_standin")
        settings = request.getfixturevalue("gemini_settings")
        server.context_window = 500
        return client_for("gemini-2.5-flash", settings), server
    server = local_server(request.param)
    server.context_window = 500
    settings = LLMSettings(openai_base_url=server.base_url, timeout_seconds=2)
    return client_for("openai:local", settings), server


def test_a_too_long_answer_is_a_context_length_error_with_the_servers_numbers(refusing):
    client, server = refusing
    with pytest.raises(ContextLengthError) as caught:
        client.complete_with_usage(MESSAGES)
    assert caught.value.limit == 500
    assert caught.value.prompt_tokens > 500
    assert len(server.requests) == 1


def test_a_too_long_answer_is_never_sent_again_unchanged(refusing):
    client, server = refusing
    sleeps: list[float] = []
    with pytest.raises(ContextLengthError):
        call_with_retries(lambda: client.complete_with_usage(MESSAGES), sleep=sleeps.append)
    assert len(server.requests) == 1 and sleeps == []


def test_the_output_limit_counts_against_a_shared_window(local_server):
    server = local_server("llamacpp")
    server.context_window = 900
    client = client_for("openai:local", LLMSettings(openai_base_url=server.base_url))
    short = [{"role": "user", "content": "Go on."}]
    assert client.complete_with_usage(short, options=GenerationOptions(max_output_tokens=100))
    with pytest.raises(ContextLengthError):
        client.complete_with_usage(short, options=GenerationOptions(max_output_tokens=1000))


def test_a_failed_call_is_reported_with_its_status_and_the_servers_words(refusing):
    client, _ = refusing
    with collecting_usage() as calls, pytest.raises(ContextLengthError):
        client.complete_with_usage(MESSAGES)
    (call,) = calls
    assert call.status == "too_long"
    assert "500" in call.error and call.usage.tokens_in == 0
    assert call.seconds is not None and call.seconds >= 0


@pytest.fixture(params=["gemini", "openai"])
def slow(request):
    if request.param == "gemini":
        server = request.getfixturevalue("gemini_standin")
        return client_for("gemini-2.5-flash", request.getfixturevalue("gemini_settings")), server
    server = request.getfixturevalue("openai_standin")
    return client_for("openai:llama3.1", request.getfixturevalue("openai_settings")), server


def test_a_timed_out_call_closes_its_connection_so_the_server_stops(slow):
    client, server = slow
    server.set_default("slow")  # answers after STANDIN_TIMEOUT_SECONDS + 1
    started = time.monotonic()
    with collecting_usage() as calls, pytest.raises(LLMTimeoutError):
        client.complete_with_usage(MESSAGES)
    assert time.monotonic() - started < STANDIN_TIMEOUT_SECONDS + 1
    deadline = time.monotonic() + 2
    while not server.abandoned and time.monotonic() < deadline:
        time.sleep(0.02)
    # The server saw the connection go while it was still "generating", and stopped.
    assert server.abandoned and server.abandoned[0] < STANDIN_TIMEOUT_SECONDS + 0.5
    assert [c.status for c in calls] == ["timed_out"]


def test_timeouts_are_not_resent_when_asked_not_to(openai_standin, openai_settings):
    openai_standin.set_default("slow")
    client = client_for("openai:llama3.1", openai_settings)
    with pytest.raises(LLMTimeoutError):
        call_with_retries(
            lambda: client.complete(MESSAGES), sleep=lambda s: None, retry_timeouts=False
        )
    assert len(openai_standin.requests) == 1
