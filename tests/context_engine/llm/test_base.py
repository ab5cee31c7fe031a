"""Retry policy, JSON validation and the offline client: no network involved."""

from __future__ import annotations

import socket

import pytest

from context_engine.llm import (
    InvalidOutputError,
    OfflineClient,
    PermanentLLMError,
    TransientLLMError,
    call_with_retries,
    parse_json_object,
    validate_json,
)


def failing(errors, result="done"):
    calls = []

    def fn():
        calls.append(1)
        if errors:
            raise errors.pop(0)
        return result

    return fn, calls


def test_transient_errors_are_retried_with_exponential_backoff():
    sleeps: list[float] = []
    fn, calls = failing([TransientLLMError("429"), TransientLLMError("500")])
    assert call_with_retries(fn, attempts=3, base_delay=0.5, sleep=sleeps.append) == "done"
    assert len(calls) == 3
    assert sleeps == [0.5, 1.0]


def test_the_last_transient_error_escapes_after_all_attempts():
    sleeps: list[float] = []
    fn, calls = failing([TransientLLMError(str(n)) for n in range(5)])
    with pytest.raises(TransientLLMError, match="2"):
        call_with_retries(fn, attempts=3, base_delay=1, max_delay=1.5, sleep=sleeps.append)
    assert len(calls) == 3
    assert sleeps == [1, 1.5]


@pytest.mark.parametrize("error", [PermanentLLMError("401"), InvalidOutputError("bad"), KeyError()])
def test_other_errors_are_not_retried(error):
    sleeps: list[float] = []
    fn, calls = failing([error])
    with pytest.raises(type(error)):
        call_with_retries(fn, sleep=sleeps.append)
    assert len(calls) == 1
    assert sleeps == []


def test_validation_checks_required_keys_and_declared_types():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "n": {"type": "integer"},
            "inner": {"type": "object", "properties": {"b": {"type": "STRING"}}, "required": ["b"]},
        },
        "required": ["a"],
    }
    assert validate_json({"a": "x", "n": 3, "inner": {"b": "y"}}, schema)["n"] == 3
    with pytest.raises(InvalidOutputError, match="'a'"):
        validate_json({"n": 1}, schema)
    with pytest.raises(InvalidOutputError, match=r"\$\.n"):
        validate_json({"a": "x", "n": True}, schema)
    with pytest.raises(InvalidOutputError, match=r"\$\.inner"):
        validate_json({"a": "x", "inner": {}}, schema)


@pytest.mark.parametrize("text", ["", "   ", "{", "[1, 2]", "null", "not json"])
def test_unusable_json_text_is_invalid_output(text):
    with pytest.raises(InvalidOutputError):
        parse_json_object(text)


def test_the_offline_client_is_deterministic_schema_valid_and_never_connects(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the offline client opened a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    schema = {
        "type": "object",
        "properties": {"definition": {"type": "string"}, "tags": {"type": "array"}},
        "required": ["definition", "tags"],
    }
    messages = [{"role": "user", "content": "The void-chisel cuts doors. It hums."}]
    client = OfflineClient()
    first = client.complete_json(messages, schema=schema)
    assert first == client.complete_json(messages, schema=schema)
    assert first == {"definition": "The void-chisel cuts doors.", "tags": []}
    assert client.complete(messages) == "The void-chisel cuts doors."
