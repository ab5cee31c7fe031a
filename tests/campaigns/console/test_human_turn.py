"""The console with a human at the table (issue 11): the waiting human sees the prompt
above the composer, the others see who the round waits for, the DM sees it on the job
bar, and the human's composer post resumes the round."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.models import Job, RoundStep, Turn
from campaigns.services.relay import round_start
from tests.campaigns.console.conftest import HX
from tests.factories import make_user

pytestmark = pytest.mark.django_db

PROMPT = "The round is waiting for you, Thorin."


def url(exp, name="console:campaign", *args):
    return reverse(name, args=[exp.pk, *args])


@pytest.fixture
def waiting(exp, owner, player, django_capture_on_commit_callbacks):
    """Model DM and Cassia; Thorin is human (played by `player`): the round waits."""
    exp.participants.update(model="offline")
    exp.participants.filter(role="Thorin").update(model="human")
    with django_capture_on_commit_callbacks(execute=True):
        job = round_start(experiment=exp, user=owner)
    job.refresh_from_db()
    assert job.status == "waiting"
    return job


def test_the_waiting_human_sees_the_prompt_above_the_composer(as_user, player, exp, waiting):
    body = as_user(player).get(url(exp)).content.decode()
    assert PROMPT in body
    assert body.index(PROMPT) < body.index('name="content"')


def test_another_player_sees_who_the_round_waits_for_not_the_prompt(as_user, exp, waiting):
    cassia = make_user("cassia_console")
    exp.participants.filter(role="Cassia").update(user=cassia)
    body = as_user(cassia).get(url(exp)).content.decode()
    assert PROMPT not in body
    assert "The round is waiting for Thorin." in body


def test_the_owner_sees_waiting_for_the_role_on_the_job_bar(as_user, owner, exp, waiting):
    body = as_user(owner).get(url(exp)).content.decode()
    assert "waiting for Thorin" in body and "Waiting for a human" in body
    assert PROMPT not in body, "the owner posts as the DM; Thorin's seat is the player's"
    poll = as_user(owner).get(url(exp, "console:job", waiting.pk), **HX)
    assert poll.status_code == 200 and 'hx-trigger="every 2s"' in poll.content.decode()


def test_the_humans_composer_post_resumes_the_round(
    as_user, player, exp, waiting, django_capture_on_commit_callbacks
):
    client = as_user(player)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url(exp, "console:turn_post"), {"kind": "action", "content": "I dive."}, **HX
        )
    assert response.status_code == 200
    assert PROMPT not in response.content.decode()
    waiting.refresh_from_db()
    assert waiting.status == Job.Status.SUCCEEDED, waiting.message
    thorin = next(s for s in waiting.result["steps"] if s["role"] == "Thorin")
    assert (thorin["status"], thorin["model"]) == ("ok", "human")


def test_the_dm_side_sees_a_skip_button_for_the_waiting_human(as_user, owner, exp, waiting):
    body = as_user(owner).get(url(exp)).content.decode()
    assert "Skip Thorin" in body
    assert url(exp, "console:human_skip", waiting.pk) in body


def test_skipping_an_away_human_stores_a_dm_only_note_and_the_round_goes_on(
    as_user, owner, player, exp, waiting, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = as_user(owner).post(url(exp, "console:human_skip", waiting.pk), **HX)
    assert response.status_code == 200
    waiting.refresh_from_db()
    assert waiting.status == Job.Status.SUCCEEDED, waiting.message
    step = RoundStep.objects.get(experiment=exp, round=waiting.result["round"], speaker="Thorin")
    assert step.status == RoundStep.Status.TIMED_OUT
    note = Turn.objects.get(pk=step.turns[0])
    assert "Thorin was skipped by the DM" in note.content
    assert waiting.message.endswith("; skipped by the DM: Thorin")
    assert note.kind == "system" and "Thorin" not in (note.visibility or ())
    # The player never reads the note, on the timeline or anywhere else.
    assert "skipped by the DM" not in as_user(player).get(url(exp)).content.decode()


def test_a_player_cannot_skip_anyone(as_user, player, exp, waiting):
    response = as_user(player).post(url(exp, "console:human_skip", waiting.pk), **HX)
    assert response.status_code in (403, 404)
    waiting.refresh_from_db()
    assert waiting.status == Job.Status.WAITING
    assert not RoundStep.objects.filter(experiment=exp, speaker="Thorin").exists()


def test_skipping_a_round_that_no_longer_waits_is_refused_and_stores_nothing(
    as_user, owner, player, exp, waiting, django_capture_on_commit_callbacks
):
    client = as_user(player)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url(exp, "console:turn_post"), {"kind": "action", "content": "I act."}, **HX)
    steps = RoundStep.objects.filter(experiment=exp).count()
    response = as_user(owner).post(url(exp, "console:human_skip", waiting.pk), **HX)
    assert response.status_code == 422
    assert "not waiting for anyone" in response.content.decode()
    assert RoundStep.objects.filter(experiment=exp).count() == steps
