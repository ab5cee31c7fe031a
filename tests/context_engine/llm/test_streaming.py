"""Streamed answers (issue 25): the real google-genai and openai SDKs over real HTTP against
the streaming stand-ins — chunks arrive in order and join to the answer, usage is the
provider's, a failure before the first chunk is retryable and after it is not."""

from __future__ import annotations

import time

import pytest

from context_engine.llm import (
    LLMTimeoutError,
    OfflineClient,
    StreamInterruptedError,
    TransientLLMError,
    call_status,
    call_with_retries,
    client_for,
    collecting_usage,
)
from context_engine.llm.offline import word_chunks
from tests.standins import Reply

MESSAGES = [
    {"role": "system", "content": "You play Cassia."},
    {"role": "user", "content": "Round 3: act."},
]
ANSWER = "PUBLIC: Cassia lifts the lantern and steps into the flooded crypt.\nMONOLOGUE: cold."


@pytest.fixture(params=["gemini", "openai"])
def backend(request):
    if request.param == "gemini":
        server = request.getfixturevalue("gemini_standin")
        return client_for("gemini-2.5-flash", request.getfixturevalue("gemini_settings")), server
    server = request.getfixturevalue("openai_standin")
    return client_for("openai:local", request.getfixturevalue("openai_settings")), server


def test_a_streamed_answer_arrives_in_chunks_that_join_to_the_answer(backend):
    client, server = backend
    server.script([Reply(text=ANSWER)])
    pieces: list[str] = []
    with collecting_usage() as calls:
        completion = client.stream_with_usage(MESSAGES, on_text=pieces.append)
    assert completion.text == ANSWER
    assert "".join(pieces) == ANSWER
    assert len(pieces) == len(ANSWER.split())  # one word a chunk, as the stand-in sends
    assert server.calls[-1].stream is True
    # the provider's usage (the stand-in counts a token per 4 bytes), recorded once
    assert completion.usage.tokens_out == (len(ANSWER.encode()) + 3) // 4
    assert completion.usage.tokens_in > 0
    assert [c.status for c in calls] == ["ok"]
    assert calls[0].usage == completion.usage


def test_the_openai_client_asks_for_the_usage_chunk(openai_standin, openai_settings):
    client = client_for("openai:local", openai_settings)
    client.stream_with_usage(MESSAGES)
    body = openai_standin.calls[-1].json
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_gemini_streams_through_stream_generate_content_as_sse(gemini_standin, gemini_settings):
    client_for("gemini-2.5-flash", gemini_settings).stream_with_usage(MESSAGES)
    assert ":streamGenerateContent" in gemini_standin.calls[-1].path
    assert "alt=sse" in gemini_standin.calls[-1].path


def test_chunks_reach_the_caller_while_the_model_is_still_writing(backend):
    client, server = backend
    server.chunk_delay = 0.15
    server.script([Reply(text="one two three four five six")])
    seen: list[float] = []
    started = time.monotonic()
    client.stream_with_usage(MESSAGES, on_text=lambda _p: seen.append(time.monotonic()))
    total = time.monotonic() - started
    assert len(seen) == 6
    # the first word came long before the answer was complete
    assert seen[0] - started < total - 0.5


def test_an_error_before_the_first_chunk_is_retried(backend):
    client, server = backend
    server.script(["500", Reply(text=ANSWER)])
    pieces: list[str] = []
    completion = call_with_retries(
        lambda: client.stream_with_usage(MESSAGES, on_text=pieces.append),
        attempts=3,
        base_delay=0,
        sleep=lambda _s: None,
    )
    assert completion.text == ANSWER and "".join(pieces) == ANSWER
    assert len(server.calls) == 2


def test_a_stream_broken_after_its_first_chunk_is_not_retried(backend):
    client, server = backend
    server.script(["stream_break"])
    pieces: list[str] = []
    with collecting_usage() as calls, pytest.raises(StreamInterruptedError) as caught:
        call_with_retries(
            lambda: client.stream_with_usage(MESSAGES, on_text=pieces.append),
            attempts=3,
            base_delay=0,
            sleep=lambda _s: None,
        )
    assert pieces, "the first chunks were passed on before it broke"
    assert caught.value.text == "".join(pieces)
    assert len(server.calls) == 1  # no second answer after the first was shown
    assert [c.status for c in calls] == ["failed"]


def test_a_stalled_stream_times_out_and_is_not_retried(backend, request):
    client, server = backend
    # the stand-in clients time out after 2 s; this model stalls 3 s after its first word
    server.chunk_delay = 3.0
    server.script([Reply(text="first second")])
    pieces: list[str] = []
    with pytest.raises(StreamInterruptedError) as caught:
        client.stream_with_usage(MESSAGES, on_text=pieces.append)
    assert pieces == ["first "]
    assert call_status(caught.value) == "timed_out"


def test_a_model_that_never_starts_times_out_retryably(backend):
    client, server = backend
    server.first_chunk_delay = 3.0
    with pytest.raises(LLMTimeoutError) as caught:
        client.stream_with_usage(MESSAGES, on_text=lambda _p: None)
    assert isinstance(caught.value, TransientLLMError)


def test_the_offline_model_streams_its_answer_a_word_at_a_time():
    pieces: list[str] = []
    client = OfflineClient()
    completion = client.stream_with_usage(
        [{"role": "user", "content": "Thorin lifts the chisel. Then more."}], on_text=pieces.append
    )
    assert completion.text == "Thorin lifts the chisel."
    assert pieces == ["Thorin", " lifts", " the", " chisel."]
    assert "".join(word_chunks("A  b\nC: d ")) == "A  b\nC: d "
