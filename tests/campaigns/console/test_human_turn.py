"""The console with a human at the table (issue 11): the waiting human sees the prompt
above the composer, the others see who the round waits for, the DM sees it on the job
bar, and the human's composer post resumes the round."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.models import Job
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
