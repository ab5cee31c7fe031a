"""The relay and a model's window, provider and time, through the openai SDK against a
llama.cpp-like stand-in that enforces its window: packs fitted to the window, a "too long"
never resent unchanged, a failed round leaves the clock where it was, a provider missing
here fails loudly, and a timed-out call is recorded and lets the server stop."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.models import Experiment, ModelCall, RoundStep, Turn
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import round_start, steps
from campaigns.services.windows import window_for_role
from tests.campaigns.api.conftest import client_for as api_client
from tests.factories import make_turn
from tests.standins.server import Reply, standin_tokens

pytestmark = pytest.mark.django_db

ANSWER = "PUBLIC: The lantern gutters."
HISTORY_ROUNDS = 12


@pytest.fixture
def table(campaign, settings, local_server, monkeypatch):
    """The DM and both players on one llama.cpp stand-in whose window is 4096 tokens; a
    long history (far more than the window) and the campaign's default 13,000 budget."""
    server = local_server("llamacpp")
    server.context_window = 4096
    server.set_default(Reply(ANSWER))
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
    monkeypatch.setattr(steps, "_sleep", lambda seconds: None)
    campaign.participants.update(model="llamacpp:smollm2", base_url=server.base_url)
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    for number in range(1, HISTORY_ROUNDS + 1):
        for speaker in ("DM", "Thorin", "Cassia"):
            make_turn(
                campaign,
                round=number,
                speaker=speaker,
                kind="narrative" if speaker == "DM" else "action",
                content=f"Round {number}: {speaker} walks the drowned causeway. " * 40,
            )
    Experiment.objects.filter(pk=campaign.pk).update(current_round=HISTORY_ROUNDS)
    campaign.refresh_from_db()
    campaign.server = server
    return campaign


def play(experiment, user, capture):
    with capture(execute=True):
        job = round_start(experiment=experiment, user=user)
    job.refresh_from_db()
    return job


def asked(call) -> int:
    """What the server counted for a call: its prompt plus the answer it was allowed."""
    return standin_tokens(call.prompt) + (call.json.get("max_tokens") or 0)


def test_every_prompt_plus_its_answer_fits_the_window_the_server_says(
    table, owner, django_capture_on_commit_callbacks
):
    job = play(table, owner, django_capture_on_commit_callbacks)
    assert job.status == "succeeded", job.message
    calls = table.server.calls
    assert len(calls) == 3  # narrate, two acts; no whispers to answer
    assert all(asked(call) <= 4096 for call in calls)
    assert {call.json["max_tokens"] for call in calls} == {1024}  # the answer's room
    probes = [r for r in table.server.requests if r.path == "/props"]
    assert len(probes) == 1  # read once, then cached
    assert not ModelCall.objects.filter(experiment=table).exclude(status="ok").exists()


def test_the_inspector_and_the_api_show_the_cap_and_why(table, owner, client):
    window = window_for_role(experiment=table, role="Thorin")
    assert (window.tokens, window.source) == (4096, "llama.cpp /props n_ctx")
    data = api_client(owner).get(f"/api/experiments/{table.pk}/context/Thorin/").json()
    assert data["cap"]["capped"] and data["cap"]["window"] == 4096
    assert data["budget"] == data["cap"]["budget"] < data["cap"]["campaign_budget"] == 13000
    assert "4096-token window (llama.cpp /props n_ctx)" in data["cap"]["reason"]
    client.force_login(owner)
    page = client.get(reverse("console:context", args=[table.pk, "Thorin"]))
    assert page.status_code == 200
    assert "4096-token window (llama.cpp /props n_ctx)" in page.content.decode()


def test_a_too_long_answer_is_retried_once_on_a_smaller_pack_and_remembered(
    table, owner, django_capture_on_commit_callbacks
):
    # The participant declares more than the server holds: the server says "too long".
    table.participants.update(context_window=16384)
    table.server.context_window = 3000
    job = play(table, owner, django_capture_on_commit_callbacks)
    assert job.status == "succeeded", job.message
    calls = table.server.calls
    first, second = calls[0], calls[1]
    assert asked(first) > 3000 >= asked(second)
    assert first.prompt != second.prompt  # never the same prompt again
    # The server's numbers were remembered: the other agents' first calls fit at once.
    assert len(calls) == 4 and all(asked(call) <= 3000 for call in calls[1:])
    refused = ModelCall.objects.get(experiment=table, status="too_long")
    assert (refused.role, refused.tokens_in) == ("DM", 0)
    assert "3000" in refused.error


def test_a_step_still_too_long_fails_clearly_and_the_failed_round_leaves_the_clock(
    table, owner, django_capture_on_commit_callbacks
):
    table.server.set_default("too_long")  # whatever is sent
    job = play(table, owner, django_capture_on_commit_callbacks)
    assert job.status == "failed"
    assert f"clock stays at round {HISTORY_ROUNDS}" in job.message
    assert len(table.server.calls) == 2 * 3  # each step: once, then once smaller
    table.refresh_from_db()
    assert table.current_round == HISTORY_ROUNDS
    assert not RoundStep.objects.filter(experiment=table).exists()
    note = Turn.objects.filter(experiment=table, kind="system").first()
    assert "too long for llamacpp:smollm2's context window" in note.content
    assert note.visibility == ["DM"]
    # The next run plays the same round, whole.
    table.server.set_default(Reply(ANSWER))
    again = play(table, owner, django_capture_on_commit_callbacks)
    assert again.status == "succeeded" and again.result["round"] == HISTORY_ROUNDS + 1
    table.refresh_from_db()
    assert table.current_round == HISTORY_ROUNDS + 1


def test_a_provider_missing_here_fails_the_step_loudly_never_offline(
    table, owner, settings, django_capture_on_commit_callbacks
):
    settings.OPENAI_BASE_URL = ""
    table.participants.filter(role="Thorin").update(model="openai:smollm2", base_url="")
    job = play(table, owner, django_capture_on_commit_callbacks)
    thorin = next(s for s in job.result["steps"] if s["role"] == "Thorin")
    assert thorin["status"] == "failed" and "OPENAI_BASE_URL" in thorin["error"]
    assert not ModelCall.objects.filter(experiment=table, role="Thorin").exists()
    assert not Turn.objects.filter(experiment=table, speaker="Thorin", round=13).exists()


def test_a_timed_out_call_is_recorded_not_resent_on_a_cpu_preset_and_the_server_stops(
    table, owner, django_capture_on_commit_callbacks
):
    table.participants.filter(role="DM").update(timeout_s=1)
    table.server.slow_seconds = 3
    table.server.script(["slow"])
    job = play(table, owner, django_capture_on_commit_callbacks)
    dm = next(s for s in job.result["steps"] if s["role"] == "DM")
    assert dm["status"] == "failed" and "timed out after 1s" in dm["error"]
    timed_out = ModelCall.objects.get(experiment=table, role="DM")
    assert (timed_out.status, timed_out.tokens_in) == ("timed_out", 0)
    assert 900 <= timed_out.duration_ms < 3000
    assert [c.behaviour for c in table.server.calls][:2] == ["slow", "reply"]  # not resent
    assert table.server.abandoned and table.server.abandoned[0] < 2
