"""The relay talking to a model: the real google-genai SDK against the Gemini stand-in on
127.0.0.1 — good answers, 5xx and 429 (retried with backoff, then a fallback), permanent
errors (not retried), and answers outside the format (stored closed, for review)."""

from __future__ import annotations

import pytest

from campaigns.models import Turn
from campaigns.reads.selectors import turns_visible_to, viewer_for_role
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import round_start, steps
from tests.campaigns.services.memory_support import use_gemini
from tests.factories import make_turn
from tests.standins.server import Reply

pytestmark = pytest.mark.django_db

MODEL = "gemini-2.5-flash"
DM_NARRATION = (
    "PUBLIC: The tide drops and the door groans.\n"
    "CHOICE: Dive for the door, or wait for the bell?\n"
    "GM NOTE: The door is a mimic; it wakes at the third bell."
)
THORIN_ACTS = (
    "PUBLIC: Thorin dives.\n"
    "WHISPER to DM: Can I feel a draught under the door?\n"
    "TAGS: thread:the door\n"
    "HINGE"
)
CASSIA_ACTS = "PUBLIC: Cassia waits on the pier.\nMONOLOGUE: Let him go first."
CASSIA_WHISPERS = "PUBLIC: Cassia waits.\nWHISPER to DM: Is the pier watched?"
DM_ANSWERS = "WHISPER to Thorin: Yes, a cold draught from below."
DM_ANSWERS_CASSIA = "WHISPER to Cassia: Two Geometers watch from the roofs."


@pytest.fixture
def table(campaign, settings, gemini_standin, monkeypatch):
    """The DM, Thorin and Cassia on Gemini (the stand-in); memory work stays offline so
    only agent calls reach the model. Retry sleeps are recorded, not slept."""
    use_gemini(settings, gemini_standin)
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
    campaign.participants.update(model=MODEL)
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    sleeps: list[float] = []
    monkeypatch.setattr(steps, "_sleep", sleeps.append)
    campaign.sleeps = sleeps
    return campaign


def play(experiment, user, capture):
    with capture(execute=True):
        job = round_start(experiment=experiment, user=user)
    job.refresh_from_db()
    return job


def stored(experiment, number):
    return [
        (t.speaker, t.kind, t.content, t.visibility, t.tags, t.hinge, t.needs_review)
        for t in Turn.objects.filter(experiment=experiment, round=number).order_by("seq")
    ]


def test_a_round_on_gemini_stores_what_each_agent_wrote_with_the_right_audience(
    table, owner, gemini_standin, django_capture_on_commit_callbacks
):
    gemini_standin.script([Reply(DM_NARRATION), Reply(THORIN_ACTS), Reply(CASSIA_ACTS)])
    gemini_standin.script([Reply(DM_ANSWERS)])
    job = play(table, owner, django_capture_on_commit_callbacks)

    assert (job.status, job.progress) == ("succeeded", 100)
    assert stored(table, 1) == [
        ("DM", "narrative", "The tide drops and the door groans.", None, [], False, False),
        ("DM", "choice", "Dive for the door, or wait for the bell?", None, [], False, False),
        (
            "DM",
            "gm_note",
            "The door is a mimic; it wakes at the third bell.",
            ["DM"],
            [],
            False,
            False,
        ),
        ("Thorin", "action", "Thorin dives.", None, [], False, False),
        (
            "Thorin",
            "whisper",
            "Can I feel a draught under the door?",
            ["DM", "Thorin"],
            ["thread:the door"],
            True,
            False,
        ),
        ("Cassia", "action", "Cassia waits on the pier.", None, [], False, False),
        ("Cassia", "monologue", "Let him go first.", ["Cassia"], [], False, False),
        (
            "DM",
            "whisper",
            "Yes, a cold draught from below.",
            ["DM", "Thorin"],
            [],
            False,
            False,
        ),
    ]
    requests = gemini_standin.calls
    assert [r.model for r in requests] == [MODEL] * 4
    dm_call, thorin_call, cassia_call, answer_call = (r.prompt for r in requests)
    assert "Round 1 begins" in dm_call
    assert "your turn, Thorin" in thorin_call and "The tide drops" in thorin_call
    # What each model was sent is its own pack: no GM note or whisper of someone else.
    for prompt in (thorin_call, cassia_call):
        assert "mimic" not in prompt
    assert "draught under the door" not in cassia_call
    assert "draught under the door" in answer_call and "Thorin whispered to you" in answer_call
    assert table.sleeps == []


def test_5xx_are_retried_with_backoff_then_the_step_is_recorded_as_failed_for_the_dm(
    table, owner, gemini_standin, django_capture_on_commit_callbacks
):
    earlier = make_turn(table, round=0, content="Setup: the harbour at dusk.")
    gemini_standin.script([Reply(DM_NARRATION), "500", "500", "500"])
    gemini_standin.script([Reply(CASSIA_WHISPERS), Reply(DM_ANSWERS_CASSIA)])
    job = play(table, owner, django_capture_on_commit_callbacks)

    assert len(gemini_standin.calls) == 1 + 3 + 1 + 1
    assert table.sleeps == [0.01, 0.02], "exponential backoff between the three attempts"
    turns = Turn.objects.filter(experiment=table, round=1).order_by("seq")
    assert not turns.filter(speaker="Thorin").exists()
    failure = turns.get(kind="system")
    assert (failure.speaker, failure.visibility) == ("DM", ["DM"])
    assert "Thorin" in failure.content and "500" in failure.content
    assert [t.speaker for t in turns] == ["DM", "DM", "DM", "DM", "Cassia", "Cassia", "DM"]
    assert [(s["role"], s["status"]) for s in job.result["steps"]] == [
        ("DM", "ok"),
        ("Thorin", "failed"),
        ("Cassia", "ok"),
        ("DM", "ok"),
    ]
    assert job.status == "succeeded" and "Thorin" in job.message
    assert Turn.objects.get(pk=earlier.pk).content == "Setup: the harbour at dusk."
    # The failure note is the DM's: players do not read it.
    for role in ("Thorin", "Cassia"):
        viewer = viewer_for_role(experiment=table, role=role)
        assert failure not in turns_visible_to(experiment=table, viewer=viewer)


def test_a_429_then_an_answer_is_retried_and_stored(
    table, owner, gemini_standin, django_capture_on_commit_callbacks
):
    gemini_standin.script([Reply(DM_NARRATION), "429", Reply("PUBLIC: Thorin dives.")])
    gemini_standin.script([Reply(CASSIA_ACTS)])
    job = play(table, owner, django_capture_on_commit_callbacks)
    assert table.sleeps == [0.01]
    assert [(s["role"], s["status"]) for s in job.result["steps"]] == [
        ("DM", "ok"),
        ("Thorin", "ok"),
        ("Cassia", "ok"),
        ("DM", "skipped"),
    ]
    assert Turn.objects.get(experiment=table, speaker="Thorin").content == "Thorin dives."
    assert not Turn.objects.filter(experiment=table, kind="system").exists()


def test_a_permanent_error_is_not_retried(
    table, owner, gemini_standin, django_capture_on_commit_callbacks
):
    gemini_standin.script([Reply(DM_NARRATION), "400", Reply(CASSIA_ACTS)])
    job = play(table, owner, django_capture_on_commit_callbacks)
    assert len(gemini_standin.calls) == 3
    assert table.sleeps == []
    failure = Turn.objects.get(experiment=table, kind="system")
    assert "PermanentLLMError" in failure.content and "400" in failure.content
    assert job.status == "succeeded"


def test_when_every_call_fails_the_job_fails_with_the_error_and_nothing_is_lost(
    table, owner, gemini_standin, django_capture_on_commit_callbacks
):
    earlier = make_turn(table, round=0, content="Setup: fog over the archive.")
    gemini_standin.set_default("500")
    job = play(table, owner, django_capture_on_commit_callbacks)

    assert job.status == "failed"
    assert "no agent could act" in job.message and "500" in job.message
    assert len(gemini_standin.calls) == 3 * 3
    failures = Turn.objects.filter(experiment=table, round=1)
    assert [(t.kind, t.visibility) for t in failures] == [("system", ["DM"])] * 3
    assert {s["status"] for s in job.result["steps"]} == {"failed", "skipped"}
    assert Turn.objects.get(pk=earlier.pk).content == "Setup: fog over the archive."


def test_an_answer_outside_the_format_is_stored_for_speaker_and_dm_flagged_never_published(
    table, owner, gemini_standin, django_capture_on_commit_callbacks
):
    garbage = "lol I will not use your labels. The vault password is swordfish."
    # Thorin's answer has no labels, and its one repair request (issue 26) none either.
    gemini_standin.script([Reply(DM_NARRATION), Reply(garbage), Reply(garbage), Reply(CASSIA_ACTS)])
    job = play(table, owner, django_capture_on_commit_callbacks)

    flagged = Turn.objects.get(experiment=table, speaker="Thorin")
    assert (flagged.content, flagged.visibility, flagged.needs_review) == (
        garbage,
        ["DM", "Thorin"],
        True,
    )
    thorin_step = next(s for s in job.result["steps"] if s["role"] == "Thorin")
    assert (thorin_step["status"], thorin_step["review"], thorin_step["held"]) == ("ok", 1, 1)
    assert "swordfish" in gemini_standin.calls[2].prompt  # quoted back to Thorin's model
    cassia = viewer_for_role(experiment=table, role="Cassia")
    assert flagged not in turns_visible_to(experiment=table, viewer=cassia)
    cassia_prompt = gemini_standin.calls[3].prompt
    assert "swordfish" not in cassia_prompt
    # Nobody whispered, so the DM had nothing to answer: four calls in all.
    assert len(gemini_standin.calls) == 4


def test_a_player_writing_a_gm_note_or_whispering_to_a_stranger_fails_closed(
    table, owner, gemini_standin, django_capture_on_commit_callbacks
):
    sneaky = (
        "PUBLIC: Thorin shrugs.\n"
        "GM NOTE: Thorin is secretly the duke.\n"
        "WHISPER to Bram: the code is 7-7-1."
    )
    gemini_standin.script([Reply(DM_NARRATION), Reply(sneaky), Reply(CASSIA_ACTS)])
    play(table, owner, django_capture_on_commit_callbacks)
    thorin = list(Turn.objects.filter(experiment=table, speaker="Thorin").order_by("seq"))
    assert [(t.kind, t.visibility, t.needs_review) for t in thorin] == [
        ("action", None, False),
        ("action", ["DM", "Thorin"], True),
        ("action", ["DM", "Thorin"], True),
    ]
    assert not Turn.objects.filter(experiment=table, kind="gm_note", speaker="Thorin").exists()
