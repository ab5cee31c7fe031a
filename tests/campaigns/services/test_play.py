""" "Play N rounds" (issue 24): one background Job playing rounds one after another,
stoppable between rounds, parked on a human, idempotent, and exclusive with other rounds."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from campaigns.models import Job, Turn
from campaigns.services import play as play_service
from campaigns.services.play import play_run, play_start, play_stop
from campaigns.services.relay import human_turn_create, round_start
from campaigns.tasks import run_play

pytestmark = pytest.mark.django_db


@pytest.fixture
def models(campaign):
    campaign.participants.update(model="offline")
    return campaign


def start(experiment, user, capture, rounds=3):
    with capture(execute=True):
        job = play_start(experiment=experiment, rounds=rounds, user=user)
    job.refresh_from_db()
    return job


def test_playing_three_rounds_plays_them_one_after_another(
    models, owner, django_capture_on_commit_callbacks
):
    job = start(models, owner, django_capture_on_commit_callbacks)
    models.refresh_from_db()
    assert (job.kind, job.status, job.progress) == ("play", "succeeded", 100)
    assert job.message == "Played 3 rounds (rounds 1–3)"
    assert models.current_round == 3
    rounds = Job.objects.filter(experiment=models, kind="round").order_by("created_at")
    assert [r.result["round"] for r in rounds] == [1, 2, 3]
    assert {r.status for r in rounds} == {"succeeded"}
    assert set(Turn.objects.filter(experiment=models).values_list("round", flat=True)) == {1, 2, 3}


@pytest.mark.parametrize("rounds", [0, 51, -1, "3", True, None, 2.5])
def test_the_number_of_rounds_is_one_to_fifty(models, owner, rounds):
    with pytest.raises(ValidationError) as caught:
        play_start(experiment=models, rounds=rounds, user=owner)
    assert caught.value.message_dict == {"rounds": ["Play from 1 to 50 rounds."]}
    assert not Job.objects.filter(experiment=models).exists()


def test_a_cast_that_cannot_play_is_refused_before_anything_is_stored(campaign, owner):
    with pytest.raises(ValidationError) as caught:  # every participant is human
        play_start(experiment=campaign, rounds=2, user=owner)
    assert "human" in caught.value.message_dict["rounds"][0]
    assert not Job.objects.filter(experiment=campaign).exists()


def test_stop_ends_the_play_after_the_round_being_played(
    models, owner, monkeypatch, django_capture_on_commit_callbacks
):
    real_round_run = play_service.relay.round_run
    played = []

    def round_then_stop(*, job_id, **kwargs):
        job = real_round_run(job_id=job_id, **kwargs)
        played.append(job.result["round"])
        if len(played) == 2:  # the DM presses Stop while round 2 is played
            play_stop(experiment=models, job=Job.objects.get(kind="play"))
        return job

    monkeypatch.setattr(play_service.relay, "round_run", round_then_stop)
    job = start(models, owner, django_capture_on_commit_callbacks, rounds=5)
    assert played == [1, 2]
    assert job.status == "succeeded"
    assert job.message == "Stopped after 2 of 5 round(s)"
    models.refresh_from_db()
    assert models.current_round == 2


def test_a_play_parks_on_a_human_and_goes_on_when_they_act(
    campaign, owner, player, django_capture_on_commit_callbacks
):
    campaign.participants.exclude(role="Thorin").update(model="offline")  # Thorin: human
    job = start(campaign, owner, django_capture_on_commit_callbacks, rounds=2)
    assert job.status == "waiting"
    assert job.message == "Round 1: waiting for Thorin"
    with django_capture_on_commit_callbacks(execute=True):
        human_turn_create(
            experiment=campaign,
            user=player,
            speaker="Thorin",
            kind="action",
            content="Thorin pries at the door.",
            visibility=None,
        )
    job.refresh_from_db()
    # Round 1 ended, so the play went on into round 2, which waits for Thorin again.
    assert (job.status, job.message) == ("waiting", "Round 2: waiting for Thorin")
    assert job.result["played"] == 1


def test_stopping_a_play_parked_on_a_human_ends_it_at_once(
    campaign, owner, django_capture_on_commit_callbacks
):
    campaign.participants.exclude(role="Thorin").update(model="offline")
    job = start(campaign, owner, django_capture_on_commit_callbacks, rounds=2)
    job = play_stop(experiment=campaign, job=job)
    assert job.status == "succeeded"
    assert job.message.startswith("Stopped after 0 of 2 round(s)")
    with pytest.raises(ValidationError) as caught:
        play_stop(experiment=campaign, job=job)
    assert "stop" in caught.value.message_dict


def test_no_other_round_or_play_starts_while_a_play_is_active(
    models, owner, django_capture_on_commit_callbacks
):
    job = Job.objects.create(
        experiment=models, kind="play", status="running", result={"rounds": 3, "played": 1}
    )
    with pytest.raises(ValidationError) as caught:
        round_start(experiment=models, user=owner)
    assert "stop that first" in caught.value.message_dict["round"][0]
    with pytest.raises(ValidationError) as caught:
        play_start(experiment=models, rounds=2, user=owner)
    assert caught.value.message_dict == {"rounds": [play_service.ALREADY_PLAYING]}
    assert Job.objects.filter(experiment=models).count() == 1
    assert job.status == "running"


def test_a_play_cannot_start_while_a_round_waits_for_a_human(
    campaign, owner, django_capture_on_commit_callbacks
):
    campaign.participants.exclude(role="Thorin").update(model="offline")
    with django_capture_on_commit_callbacks(execute=True):
        round_start(experiment=campaign, user=owner)
    with pytest.raises(ValidationError) as caught:
        play_start(experiment=campaign, rounds=2, user=owner)
    assert caught.value.message_dict == {"rounds": ["The round is waiting for Thorin."]}
    assert not Job.objects.filter(kind="play").exists()


def test_the_task_is_idempotent_a_second_delivery_plays_nothing_more(
    models, owner, django_capture_on_commit_callbacks
):
    job = start(models, owner, django_capture_on_commit_callbacks, rounds=2)
    turns = Turn.objects.count()
    assert run_play(str(job.pk)) == "succeeded"
    assert play_run(job_id=job.pk).status == "succeeded"
    assert Turn.objects.count() == turns
    assert Job.objects.filter(kind="round").count() == 2


def test_the_task_ignores_ids_that_are_not_play_jobs(models):
    round_job = Job.objects.create(experiment=models, kind="round")
    assert run_play("not-a-uuid") is None
    assert run_play(str(round_job.pk)) is None
    assert round_job.status == "pending"


def test_a_resumed_play_finishes_the_round_it_recorded_instead_of_starting_another(
    models, owner, django_capture_on_commit_callbacks
):
    """A worker died after recording round 1's Job and before running it: the rerun plays
    that round (the relay resumes it) and then the rest, never a round too many."""
    from campaigns.services.relay import round_create

    play_job = Job.objects.create(
        experiment=models,
        kind="play",
        status="pending",
        result={"rounds": 2, "played": 0, "first_round": 1, "round_job": None, "stop": False},
    )
    recorded = round_create(experiment=models, user=owner, play=play_job)
    play_job.result = {**play_job.result, "round_job": str(recorded.pk)}
    play_job.save()
    with django_capture_on_commit_callbacks(execute=True):
        job = play_run(job_id=play_job.pk)
    assert (job.status, job.result["played"]) == ("succeeded", 2)
    assert Job.objects.filter(kind="round").count() == 2
    models.refresh_from_db()
    assert models.current_round == 2
