"""Weak model output at the table (issue 26, ask 4), through the openai SDK against the
OpenAI stand-in playing a weak model: an answer with no labels gets one repair request
(the same model, its answer quoted back) and is stored labelled when the repair works;
held for the DM's review, with the reason in the round's result and message, when it
does not; the format instructions echoed back are never stored as turns; and the DM's
answer step names each whisperer with the first words of their whisper."""

from __future__ import annotations

import pytest

from campaigns.models import Experiment, ModelCall, RoundStep, Turn
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import round_start, runner, steps
from tests.factories import make_turn
from tests.standins.answers import REPAIR_MARK
from tests.standins.server import Reply, standin_tokens

pytestmark = pytest.mark.django_db

DM_NARRATION = "PUBLIC: The tide drops and the door groans.\nCHOICE: Dive, or wait?"
CASSIA_ACTS = "PUBLIC: Cassia waits on the pier."


@pytest.fixture
def table(campaign, settings, openai_standin, monkeypatch):
    """DM, Thorin and Cassia on the OpenAI stand-in; memory work offline."""
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 5
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
    monkeypatch.setattr(steps, "_sleep", lambda seconds: None)
    for role in ("DM", "Thorin", "Cassia"):
        campaign.participants.filter(role=role).update(model=f"openai:{role.lower()}")
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    return campaign


def play(experiment, user, capture):
    with capture(execute=True):
        job = round_start(experiment=experiment, user=user)
    job.refresh_from_db()
    return job


def thorin_step(experiment) -> RoundStep:
    return RoundStep.objects.get(experiment=experiment, round=1, speaker="Thorin")


def test_an_unlabelled_answer_fixed_on_repair_is_stored_labelled_and_its_call_recorded(
    table, owner, openai_standin, django_capture_on_commit_callbacks
):
    openai_standin.script([Reply(DM_NARRATION), "unlabelled_repairable"])
    openai_standin.script(["unlabelled_repairable", Reply(CASSIA_ACTS)])
    job = play(table, owner, django_capture_on_commit_callbacks)

    assert job.status == "succeeded", job.message
    thorin = list(Turn.objects.filter(experiment=table, speaker="Thorin"))
    assert [(t.kind, t.visibility, t.needs_review) for t in thorin] == [("action", None, False)]
    assert thorin[0].content.startswith("I look around carefully")
    repair = openai_standin.calls[2]
    assert repair.model == openai_standin.calls[1].model
    assert "had no labelled blocks" in repair.prompt and "I look around carefully" in repair.prompt
    detail = thorin_step(table).detail
    assert (detail["repaired"], detail["held"], detail["held_reasons"]) == (1, 0, {})
    calls = ModelCall.objects.filter(experiment=table, role="Thorin")
    keys = set(calls.values_list("key", flat=True))
    assert keys == {"round:1:act:Thorin", "round:1:act:Thorin:repair"}
    assert "1 answer(s) labelled on a repair request" in job.message
    assert "held" not in job.message


def test_an_answer_still_unlabelled_after_repair_is_held_for_the_dm_with_the_reason(
    table, owner, openai_standin, django_capture_on_commit_callbacks
):
    openai_standin.script([Reply(DM_NARRATION), "unlabelled", "unlabelled", Reply(CASSIA_ACTS)])
    job = play(table, owner, django_capture_on_commit_callbacks)

    assert job.status == "succeeded", job.message
    thorin = list(Turn.objects.filter(experiment=table, speaker="Thorin"))
    assert [(t.visibility, t.needs_review) for t in thorin] == [(["DM", "Thorin"], True)]
    detail = thorin_step(table).detail
    assert (detail["held"], detail["held_reasons"], detail["repaired"]) == (
        1,
        {"no labels": 1},
        0,
    )
    assert "1 answer(s) held for the DM's review (no labels)" in job.message
    assert len(openai_standin.calls) == 4  # DM, Thorin, Thorin's repair, Cassia
    assert "I look around carefully" not in openai_standin.calls[3].prompt


def test_echoed_format_instructions_are_never_stored_as_turns(
    table, owner, openai_standin, django_capture_on_commit_callbacks
):
    openai_standin.script([Reply(DM_NARRATION), "echo_format", "echo_format", Reply(CASSIA_ACTS)])
    job = play(table, owner, django_capture_on_commit_callbacks)

    assert job.status == "succeeded", job.message
    echoed = openai_standin.calls[1]
    assert "PUBLIC: what everyone sees you do or say." in echoed.prompt
    assert not Turn.objects.filter(experiment=table, speaker="Thorin").exists()
    assert not Turn.objects.filter(experiment=table, content__icontains="everyone sees").exists()
    note = Turn.objects.get(experiment=table, kind="system")
    assert (note.visibility, "only echoed the format" in note.content) == (["DM"], True)
    detail = thorin_step(table).detail
    assert (detail["held_reasons"], detail["echoes"]) == ({"echoed the format instructions": 1}, 6)
    assert "held for the DM's review (echoed the format instructions)" in job.message


def test_an_echo_beside_a_real_action_is_dropped_without_a_repair(
    table, owner, openai_standin, django_capture_on_commit_callbacks
):
    mixed = (
        "PUBLIC: Thorin dives for the door.\n"
        "MONOLOGUE: your private thoughts; no one else ever reads them."
    )
    openai_standin.script([Reply(DM_NARRATION), Reply(mixed), Reply(CASSIA_ACTS)])
    play(table, owner, django_capture_on_commit_callbacks)

    thorin = list(Turn.objects.filter(experiment=table, speaker="Thorin"))
    assert [(t.kind, t.content) for t in thorin] == [("action", "Thorin dives for the door.")]
    assert thorin_step(table).detail["echoes"] == 1
    assert len(openai_standin.calls) == 3  # no repair request


def test_the_dms_answer_step_names_each_whisperer_with_their_whisper(
    table, owner, openai_standin, django_capture_on_commit_callbacks
):
    long_whisper = (
        "Is the pier watched tonight by the Geometers from the roofs or only by the "
        "harbour cats that follow me everywhere?"
    )
    openai_standin.script(
        [
            Reply(DM_NARRATION),
            Reply("PUBLIC: Thorin dives.\nWHISPER to DM: Can I feel a draught under the door?"),
            Reply(f"PUBLIC: Cassia waits.\nWHISPER to DM: {long_whisper}"),
            Reply("WHISPER to Thorin: Yes, a cold draught.\nWHISPER to Cassia: Only cats."),
        ]
    )
    job = play(table, owner, django_capture_on_commit_callbacks)

    assert job.status == "succeeded", job.message
    answer = openai_standin.calls[3].prompt
    assert 'Thorin whispered to you (round 1: "Can I feel a draught under the door?")' in answer
    first_words = " ".join(long_whisper.split()[:12])
    assert f'Cassia whispered to you (round 1: "{first_words}…")' in answer
    assert "harbour cats" not in answer.split("Cassia whispered to you", 1)[1].split("\n")[0]
    assert "'WHISPER to Thorin:' 'WHISPER to Cassia:'" in answer


def test_the_round_message_counts_held_answers_by_reason_and_repairs():
    done = [
        {"held": 2, "held_reasons": {"no labels": 1, "quotes": 1}, "repaired": 0},
        {"held": 1, "held_reasons": {"no labels": 1}, "repaired": 0},
        {"held": 0, "held_reasons": {}, "repaired": 1},
        {"held": 1},  # a step recorded before reasons were: the leak guard's hold
    ]
    assert runner._held_note(done) == (
        "; 4 answer(s) held for the DM's review (no labels: 2, quotes: 2)"
        "; 1 answer(s) labelled on a repair request"
    )
    assert runner._held_note([{"held": 0, "repaired": 0}]) == ""


def test_an_answer_closed_for_another_reason_is_held_with_that_reason(
    table, owner, openai_standin, django_capture_on_commit_callbacks
):
    stranger = "WHISPER to Bram: the code is 7-7-1."
    openai_standin.script([Reply(DM_NARRATION), Reply(stranger), Reply(stranger)])
    openai_standin.script([Reply(CASSIA_ACTS)])
    job = play(table, owner, django_capture_on_commit_callbacks)

    detail = thorin_step(table).detail
    assert detail["held_reasons"] == {"unknown recipient 'Bram'": 1}
    assert "(unknown recipient 'Bram')" in job.message


def test_a_repair_request_fits_the_models_window_like_the_first_ask(
    campaign, owner, settings, local_server, monkeypatch, django_capture_on_commit_callbacks
):
    server = local_server("llamacpp")
    server.context_window = 4096
    server.set_default("unlabelled")
    monkeypatch.setattr(steps, "_sleep", lambda seconds: None)
    campaign.participants.update(model="llamacpp:smollm2", base_url=server.base_url)
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    for number in range(1, 9):
        make_turn(campaign, round=number, speaker="DM", kind="narrative", content="Rain. " * 300)
    Experiment.objects.filter(pk=campaign.pk).update(current_round=8)
    job = play(campaign, owner, django_capture_on_commit_callbacks)

    assert job.status == "succeeded", job.message
    repairs = [call for call in server.calls if REPAIR_MARK in call.prompt]
    assert len(repairs) == 3  # the DM and both players, once each
    for call in server.calls:
        assert standin_tokens(call.prompt) + (call.json.get("max_tokens") or 0) <= 4096
    assert "3 answer(s) held for the DM's review (no labels)" in job.message
