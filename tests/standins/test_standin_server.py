"""The stand-ins themselves: scripting, defaults, recording, stop and restart."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.standins import GeminiStandin, OpenAIStandin, Reply


def post(url: str, body: dict, headers: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_the_script_runs_in_order_then_the_default_resumes(openai_standin):
    url = openai_standin.base_url + "/chat/completions"
    openai_standin.script(["429", Reply(text="custom"), "500"])
    statuses = [post(url, CHAT)[0] for _ in range(4)]
    assert statuses == [429, 200, 500, 200]
    assert [r.behaviour for r in openai_standin.requests] == ["429", "reply", "500", "ok"]
    openai_standin.set_default("500")
    assert post(url, CHAT)[0] == 500


def test_requests_are_recorded_with_their_prompt(openai_standin):
    post(openai_standin.base_url + "/chat/completions", CHAT)
    (request,) = openai_standin.requests
    assert (request.path, request.model, request.prompt) == ("/v1/chat/completions", "m", "hi")


def test_the_gemini_standin_rejects_what_the_real_api_rejects(gemini_standin):
    url = gemini_standin.url + "/v1beta/models/gemini-2.5-flash:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert post(url, body)[0] == 403  # no API key
    assert post(url, {}, {"x-goog-api-key": "k"})[0] == 400
    assert post(gemini_standin.url + "/v1beta/models/x:countTokens", body)[0] == 404
    status, answer = post(url, body, {"x-goog-api-key": "k"})
    assert status == 200
    assert answer["candidates"][0]["content"]["parts"][0]["text"]


def test_unknown_behaviours_are_refused():
    with pytest.raises(ValueError, match="Unknown behaviour"):
        OpenAIStandin().script(["teapot"])


def test_a_stopped_server_refuses_and_restarts_on_the_same_port():
    server = GeminiStandin().start()
    port = server.port
    server.stop()
    assert not server.running
    with pytest.raises(OSError):
        urllib.request.urlopen(server.url, timeout=2)
    server.start()
    try:
        assert server.port == port
        status, _ = post(
            server.url + "/v1/models/g:generateContent",
            {"contents": [{"role": "user", "parts": [{"text": "x"}]}]},
            {"x-goog-api-key": "k"},
        )
        assert status == 200
    finally:
        server.stop()
