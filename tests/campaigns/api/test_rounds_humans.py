"""Humans at the table (issue 11): a round waits for a human's turn, the human posts it
through the API, and the round goes on — model DM with a human player, human DM with
model players; only the waiting human's own post resumes the round."""

from __future__ import annotations

from itertools import groupby

import pytest

from campaigns.models import Job, RoundStep, Turn
from campaigns.reads import numbering, selectors
from campaigns.services.relay.common import HUMAN_ANSWERS

pytestmark = pytest.mark.django_db


def rounds_url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/rounds/"


def turns_url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/turns/"


def start(api, user, experiment, capture):
    with capture(execute=True):
        response = api(user).post(rounds_url(experiment), {}, format="json")
    assert response.status_code == 202, response.json()
    return Job.objects.get(pk=response.json()["task_id"])


def post(api, user, experiment, capture, **body):
    body.setdefault("kind", "action")
    body.setdefault("content", "I act.")
    with capture(execute=True):
        return api(user).post(turns_url(experiment), body, format="json")


def speakers(experiment, number):
    """Who spoke in the round, in order (consecutive turns of one speaker once)."""
    turns = Turn.objects.filter(experiment=experiment, round=number).order_by("seq")
    return [speaker for speaker, _ in groupby(t.speaker for t in turns)]


@pytest.fixture
def human_thorin(campaign, player):
    """Model DM and Cassia (offline); Thorin is human, played by `player`."""
    campaign.participants.exclude(role="Thorin").update(model="offline")
    return campaign


def test_a_round_waits_for_the_human_player_and_the_task_says_so(
    api, human_thorin, owner, player, django_capture_on_commit_callbacks
):
    job = start(api, owner, human_thorin, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.status == "waiting"
    assert job.message == "Round 1: waiting for Thorin"
    assert job.result["waiting"]["role"] == "Thorin"
    assert job.result["waiting"]["step"] == "act"
    assert speakers(human_thorin, 1) == ["DM"]  # the narration, then nothing
    polled = api(owner).get(f"/api/tasks/{job.pk}/").json()
    assert (polled["status"], polled["message"]) == ("waiting", "Round 1: waiting for Thorin")
    # The player polling the round's task sees that it waits, not the DM-side message.
    seen = api(player).get(f"/api/tasks/{job.pk}/").json()
    assert seen["status"] == "waiting"


def test_the_human_players_post_resumes_the_round_to_the_end(
    api, human_thorin, owner, player, django_capture_on_commit_callbacks
):
    job = start(api, owner, human_thorin, django_capture_on_commit_callbacks)
    response = post(api, player, human_thorin, django_capture_on_commit_callbacks, speaker="Thorin")
    assert response.status_code == 201, response.json()
    job.refresh_from_db()
    assert (job.status, job.progress) == ("succeeded", 100), job.message
    assert speakers(human_thorin, 1) == ["DM", "Thorin", "Cassia", "DM"]
    thorin = next(s for s in job.result["steps"] if s["role"] == "Thorin")
    assert thorin == {
        "step": "act",
        "role": "Thorin",
        "model": "human",
        "status": "ok",
        "turns": [Turn.objects.get(experiment=human_thorin, speaker="Thorin", round=1).pk],
    }
    # The player is shown the turn's position in their own stream, not its id.
    shown = response.json()["id"]
    assert shown == response.json()["seq"]
    viewer = selectors.viewer_for_role(experiment=human_thorin, role="Thorin")
    at = numbering.turn_at_position(experiment=human_thorin, viewer=viewer, position=shown)
    assert (at.speaker, at.pk) == ("Thorin", thorin["turns"][0])
    assert "waiting" not in job.result
    keys = list(RoundStep.objects.filter(experiment=human_thorin).values_list("step", "speaker"))
    assert keys == [("narrate", "DM"), ("act", "Thorin"), ("act", "Cassia"), ("answer", "DM")]


def test_a_waiting_round_blocks_a_new_one_naming_who_it_waits_for(
    api, human_thorin, owner, django_capture_on_commit_callbacks
):
    start(api, owner, human_thorin, django_capture_on_commit_callbacks)
    response = api(owner).post(rounds_url(human_thorin), {}, format="json")
    assert response.status_code == 409
    assert response.json()["round"] == ["The round is waiting for Thorin."]
    assert Job.objects.filter(experiment=human_thorin).count() == 1


def test_another_players_post_does_not_resume_the_round(
    api, campaign, owner, player, other_player, django_capture_on_commit_callbacks
):
    campaign.participants.filter(role="DM").update(model="offline")  # Thorin, Cassia: human
    job = start(api, owner, campaign, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.result["waiting"]["role"] == "Thorin"
    # Cassia may post in the open round, but it is not her turn: the round still waits.
    response = post(
        api, other_player, campaign, django_capture_on_commit_callbacks, speaker="Cassia"
    )
    assert response.status_code == 201
    job.refresh_from_db()
    assert (job.status, job.result["waiting"]["role"]) == ("waiting", "Thorin")
    # She cannot post Thorin's turn for him.
    response = post(
        api, other_player, campaign, django_capture_on_commit_callbacks, speaker="Thorin"
    )
    assert response.status_code == 403
    assert "speaker" in response.json()
    job.refresh_from_db()
    assert job.status == "waiting"
    assert not RoundStep.objects.filter(experiment=campaign, speaker="Thorin").exists()


def test_the_owner_posting_as_a_linked_human_does_not_take_their_turn(
    api, human_thorin, owner, player, django_capture_on_commit_callbacks
):
    job = start(api, owner, human_thorin, django_capture_on_commit_callbacks)
    response = post(api, owner, human_thorin, django_capture_on_commit_callbacks, speaker="Thorin")
    assert response.status_code == 201  # the DM side may write as anyone…
    job.refresh_from_db()
    assert job.status == "waiting"  # …but only Thorin's human takes Thorin's turn
    post(api, player, human_thorin, django_capture_on_commit_callbacks, speaker="Thorin")
    job.refresh_from_db()
    assert job.status == "succeeded"


def test_the_owner_plays_an_unlinked_human_seat(
    api, campaign, owner, django_capture_on_commit_callbacks
):
    campaign.participants.exclude(role="Thorin").update(model="offline")  # no user linked
    job = start(api, owner, campaign, django_capture_on_commit_callbacks)
    post(api, owner, campaign, django_capture_on_commit_callbacks, speaker="Thorin")
    job.refresh_from_db()
    assert job.status == "succeeded"


def test_a_human_dm_narrates_and_the_round_never_waits_on_whispers(
    api, campaign, owner, django_capture_on_commit_callbacks
):
    """The human DM's answer step is skipped every round alike (they answer whispers on the
    whispers page): a round that waited for the DM only when someone whispered them would
    tell every player that a whisper they cannot read exists (issue 23, finding 5)."""
    campaign.participants.exclude(role="DM").update(model="offline")  # the DM: human (owner)
    job = start(api, owner, campaign, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert (job.status, job.result["waiting"]["step"]) == ("waiting", "narrate")
    assert not Turn.objects.filter(experiment=campaign).exists()

    post(
        api,
        owner,
        campaign,
        django_capture_on_commit_callbacks,
        speaker="DM",
        kind="narrative",
        content="The tide drops.",
    )
    job.refresh_from_db()
    # The offline players acted (and whispered to the DM); the round ends all the same.
    assert Turn.objects.filter(experiment=campaign, kind="whisper").exists()
    assert job.status == "succeeded", job.message
    assert [s["status"] for s in job.result["steps"]] == ["ok", "ok", "ok", "skipped"]
    assert job.result["steps"][-1]["reason"] == HUMAN_ANSWERS
    # The DM answers when they like; the reply is just a whisper.
    response = post(
        api,
        owner,
        campaign,
        django_capture_on_commit_callbacks,
        speaker="DM",
        kind="whisper",
        visibility=["DM", "Thorin"],
        content="Only you feel the draught.",
    )
    assert response.status_code == 201


def skip_url(job) -> str:
    return f"/api/tasks/{job.pk}/skip/"


def test_the_owner_skips_an_away_human_through_the_api_and_the_round_goes_on(
    api, human_thorin, owner, player, django_capture_on_commit_callbacks
):
    job = start(api, owner, human_thorin, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        response = api(owner).post(skip_url(job), {}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "pending"  # handed back to the workers
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    step = RoundStep.objects.get(experiment=human_thorin, round=1, speaker="Thorin")
    assert step.status == RoundStep.Status.TIMED_OUT
    note = Turn.objects.get(pk=step.turns[0])
    assert "Thorin was skipped by the DM" in note.content
    assert "skipped by the DM: Thorin" in job.message
    assert "did not act in time" not in job.message
    assert speakers(human_thorin, 1)[-1] == "DM"  # the round went on to the DM's answer
    # The note is the DM side's: the skipped player's turn list never shows it.
    listed = api(player).get(turns_url(human_thorin)).json()
    contents = [turn["content"] for turn in listed["results"]]
    assert not any("skipped by the DM" in content for content in contents)


@pytest.mark.parametrize("who", ["player", "other_player", "stranger"])
def test_only_the_dm_side_may_skip_and_a_refusal_stores_nothing(
    api, human_thorin, owner, who, request, django_capture_on_commit_callbacks
):
    job = start(api, owner, human_thorin, django_capture_on_commit_callbacks)
    turns = Turn.objects.filter(experiment=human_thorin).count()
    response = api(request.getfixturevalue(who)).post(skip_url(job), {}, format="json")
    assert response.status_code == (404 if who == "stranger" else 403)
    job.refresh_from_db()
    assert job.status == Job.Status.WAITING
    assert Turn.objects.filter(experiment=human_thorin).count() == turns
    assert not RoundStep.objects.filter(experiment=human_thorin, speaker="Thorin").exists()


def test_skipping_a_round_that_no_longer_waits_is_a_conflict_naming_the_job(
    api, human_thorin, owner, player, django_capture_on_commit_callbacks
):
    job = start(api, owner, human_thorin, django_capture_on_commit_callbacks)
    post(api, player, human_thorin, django_capture_on_commit_callbacks, speaker="Thorin")
    turns = Turn.objects.filter(experiment=human_thorin).count()
    response = api(owner).post(skip_url(job), {}, format="json")
    assert response.status_code == 409
    assert "not waiting for anyone" in response.json()["job"][0]
    assert Turn.objects.filter(experiment=human_thorin).count() == turns


def test_skipping_an_unknown_task_is_a_404(api, owner):
    response = api(owner).post("/api/tasks/not-a-uuid/skip/", {}, format="json")
    assert response.status_code == 404
    response = api(owner).post(
        "/api/tasks/00000000-0000-0000-0000-000000000000/skip/", {}, format="json"
    )
    assert response.status_code == 404
