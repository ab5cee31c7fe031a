"""The model judge through the real SDKs against the stand-in servers (both backends)."""

from __future__ import annotations

import json

import pytest

from context_engine.arena import ArenaOptions, ModelJudge, OfflineJudge, Replay, run_arena
from context_engine.llm import client_for
from tests.context_engine.arena.small import FACTS, history
from tests.standins import Reply

OPTIONS = ArenaOptions(strategies=("full_history", "sliding_window"), budgets=(13000,), every=1)


@pytest.fixture(params=["gemini", "openai"])
def backend(request):
    if request.param == "gemini":
        server = request.getfixturevalue("gemini_standin")
        settings = request.getfixturevalue("gemini_settings")
        return client_for("gemini-2.5-flash", settings), server
    server = request.getfixturevalue("openai_standin")
    settings = request.getfixturevalue("openai_settings")
    return client_for("openai:llama3.1", settings), server


def judged(judge):
    return run_arena(Replay(history(window_turns=1)), FACTS, OPTIONS, judge=judge)


def retention(report):
    return [(r["strategy"], r["retention"], r["hinge_retention"]) for r in report["results"]]


def test_good_answers_score_like_the_pack_and_are_cached(backend):
    client, server = backend
    judge = ModelJudge(client, sleep=lambda s: None)
    report, details = judged(judge)
    offline, _ = judged(OfflineJudge())
    assert retention(report) == retention(offline)
    assert details["judge"]["fallbacks"] == 0
    calls = len(server.requests)
    assert calls == details["judge"]["model_calls"] > 0
    first = server.requests[0]
    assert first.wants_json and "Question:" in first.prompt and "Context:" in first.prompt
    # A rerun with the same judge asks nothing new: cached by (pack hash, fact).
    judged(judge)
    assert len(server.requests) == calls
    assert judge.stats.cache_hits >= calls


def test_wrong_answers_are_not_retained(backend):
    client, server = backend
    server.set_default(Reply(text=json.dumps({"answer": "The ferry is free.", "known": True})))
    report, details = judged(ModelJudge(client, sleep=lambda s: None))
    assert all(r["retention"] == 0.0 for r in report["results"])
    server.set_default(Reply(text=json.dumps({"answer": "", "known": False})))
    report, _ = judged(ModelJudge(client, sleep=lambda s: None))
    assert all(r["retention"] == 0.0 for r in report["results"])
    assert details["judge"]["fallbacks"] == 0


@pytest.mark.parametrize("failure", ["500", "malformed_json", "safety"])
def test_failures_fall_back_to_the_offline_judge_and_say_so(backend, failure):
    client, server = backend
    server.set_default(failure)
    report, details = judged(ModelJudge(client, sleep=lambda s: None))
    offline, _ = judged(OfflineJudge())
    assert retention(report) == retention(offline)
    stats = details["judge"]
    assert stats["fallbacks"] == stats["questions"] > 0
    assert "fell back to the offline judge" in stats["note"]
    assert stats["model_calls"] == 1  # the model is marked down after its first failure
