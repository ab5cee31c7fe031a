"""A real small model at the table (issue 26): SmolLM2-135M-Instruct, served by
llama-cpp-python with a 4,096-token window, plays the demo, writes the memory after a
/checkpoint, and plays a campaign whose default budget is three times its window.

What a stand-in hides and these show: prompts that do not fit the window, answers without
labels or with the format instructions echoed back, servers that refuse structured output.
The assertions are the product's promises, not the model's quality: every round completes
or fails without moving the clock, every answer is stored or held with a reason, no prompt
exceeds the window, nothing a speaker cannot read crosses the wire, and every memory call
is answered or falls back with the server's reason logged.
"""

from __future__ import annotations

import json
import logging

import pytest

from campaigns import demo
from campaigns.models import Job, ModelCall, Participant, RoundStep, Summary, Turn
from campaigns.reads import selectors
from campaigns.services import transcripts
from campaigns.services.memory.commands import run_command
from campaigns.services.relay import round_start
from context_engine.arena.generate import generate_campaign

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.real_model,
    pytest.mark.slow,
    pytest.mark.timeout(1500),  # a CPU model: minutes, not the suite's 300 s
]

MAX_OUTPUT = 160  # tokens per agent answer: enough for a labelled answer, quick on a CPU


def _seat_the_model(experiment, model_server) -> None:
    """Every agent on the real model; the memory workers stay offline here (the
    /checkpoint test gives them the model), so a round's time is the agents'."""
    experiment.config = {**(experiment.config or {}), "memory_model": "offline"}
    experiment.save(update_fields=["config"])
    # llama-cpp-python's server does not say its window (llama.cpp's own server has /props):
    # it is declared in the cast, as the README's recipe says.
    Participant.objects.filter(
        experiment=experiment, kind__in=[Participant.Kind.DM, Participant.Kind.PLAYER]
    ).update(
        model=model_server.model,
        max_output_tokens=MAX_OUTPUT,
        context_window=model_server.n_ctx,
        timeout_s=300,
    )


def _play(experiment, owner, rounds: int) -> list[Job]:
    jobs = []
    for _ in range(rounds):
        before = selectors.current_round(experiment=experiment)
        job = round_start(experiment=experiment, user=owner)  # eager: played inline
        job.refresh_from_db()
        after = selectors.current_round(experiment=experiment)
        if job.status == Job.Status.SUCCEEDED:
            assert after == before + 1, "a completed round moves the clock by one"
        else:
            assert after == before, f"a failed round never moves the clock: {job.message}"
        jobs.append(job)
    return jobs


def _prompt_text(exchange) -> str:
    return "\n".join(str(m.get("content", "")) for m in (exchange.body or {}).get("messages", []))


def _usage(exchange) -> dict:
    try:
        return json.loads(exchange.answer).get("usage") or {}
    except ValueError:
        return {}


def _server_words(answer: str) -> str:
    """The first line of what a refusing server said (its error message, else the body)."""
    try:
        message = str(json.loads(answer)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        message = answer
    return message.strip().splitlines()[0][:60]


def _assert_prompts_fit_the_window(wire, model_server) -> None:
    chats = wire.chat_requests()
    assert chats, "the agents talked to the model"
    too_long = [e for e in chats if e.status == 400 and "context" in e.answer.lower()]
    assert not too_long, f"{len(too_long)} calls were refused as too long: {too_long[0].answer}"
    for exchange in chats:
        if exchange.status != 200:
            continue
        prompt = int(_usage(exchange).get("prompt_tokens") or 0)
        asked = int((exchange.body or {}).get("max_tokens") or 0)
        assert asked, "every call sets an output limit"
        assert prompt + asked <= model_server.n_ctx, (prompt, asked)


def _assert_nothing_hidden_crossed_the_wire(experiment, wire) -> None:
    """Each agent request holds no turn text, secret or identity its speaker cannot read."""
    participants = list(experiment.participants.all())
    clock = selectors.current_round(experiment=experiment)
    checked = 0
    for exchange in wire.chat_requests():
        prompt = _prompt_text(exchange)
        speakers = [p for p in participants if p.identity and p.identity in prompt]
        if len(speakers) != 1:
            continue  # a memory worker's request, or one the identity does not name
        speaker = speakers[0]
        viewer = selectors.viewer_for_participant(speaker)
        readable = set(
            selectors.turns_visible_to(experiment=experiment, viewer=viewer).values_list(
                "pk", flat=True
            )
        )
        hidden = [
            t.content
            for t in Turn.objects.filter(experiment=experiment).exclude(pk__in=readable)
            if len(t.content) >= 40
        ]
        hidden += [
            p.secret
            for p in participants
            if p.secret
            and not selectors.secret_readable(participant=p, viewer=viewer, round_now=clock)
        ]
        leaked = [text[:60] for text in hidden if text in prompt]
        assert not leaked, f"{speaker.role}'s request carried text it cannot read: {leaked}"
        checked += 1
    assert checked, "at least one agent request was checked"


def _assert_every_answer_stored_or_held(jobs) -> None:
    for job in jobs:
        assert job.status == Job.Status.SUCCEEDED, job.message
        steps = job.result["steps"]
        assert steps, "a round has steps"
        for step in steps:
            assert step["status"] != RoundStep.Status.FAILED, step
            if step["status"] == RoundStep.Status.SKIPPED:
                assert step.get("reason"), step
            else:
                assert step["turns"], f"a stored step stored turns: {step}"
        stored = Turn.objects.filter(pk__in=[pk for s in steps for pk in s["turns"]])
        instructions = ("Reply with", "Label each", "ACTION:", "WHISPER TO")
        echoed = [t for t in stored if sum(marker in t.content for marker in instructions) >= 2]
        assert not echoed, f"format instructions stored as turns: {echoed[0].content[:200]}"


def test_the_demo_plays_two_rounds_with_every_agent_on_the_real_model(owner, wire, model_server):
    experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
    _seat_the_model(experiment, model_server)

    jobs = _play(experiment, owner, rounds=2)

    _assert_every_answer_stored_or_held(jobs)
    _assert_prompts_fit_the_window(wire, model_server)
    _assert_nothing_hidden_crossed_the_wire(experiment, wire)
    calls = ModelCall.objects.filter(experiment=experiment)
    assert calls.count() >= len(wire.chat_requests()) - 1, "usage records every call"


def test_a_checkpoint_with_the_real_model_as_memory_model(owner, wire, model_server, caplog):
    experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
    experiment.config = {
        **(experiment.config or {}),
        "summarizer_model": model_server.model,
        "definer_model": model_server.model,
    }
    experiment.save(update_fields=["config"])

    with caplog.at_level(logging.WARNING):
        job = run_command(experiment=experiment, command="checkpoint", user=owner)
    job.refresh_from_db()

    assert job.status == Job.Status.SUCCEEDED, job.message
    memory_calls = wire.chat_requests()
    assert memory_calls, "the memory workers called the model"
    assert all((e.body or {}).get("max_tokens") for e in memory_calls), "every call is bounded"
    digests = Summary.objects.filter(experiment=experiment, kind="digest")
    assert digests.exists()
    logged = " ".join(r.getMessage() for r in caplog.records)
    for digest in digests:
        assert digest.text.strip(), "a digest is never empty"
        if digest.method == Summary.Method.FALLBACK:
            assert "fell back" in logged, "a fallback says why, in the log"
    refused = [e for e in memory_calls if e.status >= 400]
    for exchange in refused:  # every refusal's own words reach the log
        said = _server_words(exchange.answer)
        assert any(said in r.getMessage() for r in caplog.records), said
    bible_terms = {t.lower() for t in experiment.lore.values_list("term", flat=True)}
    assert not bible_terms & {"ollama", "permanentllmerror", "transientllmerror", "relay"}


def test_a_campaign_whose_default_budget_exceeds_the_window(owner, wire, model_server):
    data = generate_campaign(rounds=40, players=2, seed=3)
    data.pop("questions", None)
    experiment = transcripts.import_transcript(data=data, owner=owner)
    _seat_the_model(experiment, model_server)
    assert (experiment.config or {}).get("budgets") is None, "the default 13,000-token budget"

    jobs = _play(experiment, owner, rounds=1)

    _assert_every_answer_stored_or_held(jobs)
    _assert_prompts_fit_the_window(wire, model_server)
