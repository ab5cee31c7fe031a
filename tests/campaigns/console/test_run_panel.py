"""The campaign page's Run panel (issue 24): Play N rounds with Stop, a running state
that disables the conflicting buttons, and /checkpoint, /compress, /clear explained and
confirmed."""

import pytest
from django.urls import reverse

from campaigns.models import ContextEvent, Job, Turn
from tests.campaigns.console.conftest import HX, is_fragment

pytestmark = pytest.mark.django_db


def url(exp, name="console:campaign", *args):
    return reverse(name, args=[exp.pk, *args])


@pytest.fixture
def models(exp):
    exp.participants.update(model="offline")
    return exp


def test_play_n_rounds_plays_them_and_answers_the_panel(
    as_user, owner, models, django_capture_on_commit_callbacks
):
    before = models.current_round
    client = as_user(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url(models, "console:play"), {"rounds": "3"}, **HX)
    assert response.status_code == 200 and is_fragment(response)
    assert 'id="run-panel"' in response.content.decode()
    play = Job.objects.get(experiment=models, kind="play")
    assert (play.status, play.result["played"]) == ("succeeded", 3)
    models.refresh_from_db()
    assert models.current_round == before + 3
    poll = client.get(url(models, "console:job", play.pk), **HX)
    body = poll.content.decode()
    assert poll.status_code == 286 and "job-done" in poll["HX-Trigger"]
    assert "Played 3 rounds" in body
    assert f'<strong id="current-round" hx-swap-oob="true">{before + 3}</strong>' in body


@pytest.mark.parametrize("rounds", ["0", "51", "abc", ""])
def test_a_bad_number_of_rounds_is_refused_on_the_field(as_user, owner, models, rounds):
    response = as_user(owner).post(url(models, "console:play"), {"rounds": rounds}, **HX)
    assert response.status_code == 422
    assert 'class="error"' in response.content.decode().split('name="rounds"')[1]
    assert not Job.objects.filter(experiment=models, kind__in=["play", "round"]).exists()


def test_while_anything_runs_the_buttons_are_disabled_and_the_bar_shows_the_step(
    as_user, owner, models
):
    round_job = Job.objects.create(
        experiment=models, kind="round", status="running", message="Round 16: Cassia acting…"
    )
    play = Job.objects.create(
        experiment=models,
        kind="play",
        status="running",
        progress=33,
        message="Round 2 of 3",
        result={"rounds": 3, "played": 1, "round_job": str(round_job.pk)},
    )
    page = as_user(owner).get(url(models)).content.decode()
    panel = page.split('id="run-panel"')[1].split('id="job-progress"')[0]
    for command in ("round", "checkpoint", "compress", "clear", "play"):
        button = panel.split(f"cmd-{command}")[1].split(">")[0]
        assert button.endswith(" disabled"), command
    assert "Round 16: Cassia acting…" in page
    assert 'class="run-panel busy"' in page
    assert f'hx-get="{url(models, "console:job", play.pk)}"' in page
    assert "cmd-stop" in page


def test_nothing_running_leaves_the_buttons_enabled_and_stops_polling(as_user, owner, models):
    job = Job.objects.create(experiment=models, kind="checkpoint", status="succeeded", progress=100)
    page = as_user(owner).get(url(models)).content.decode()
    panel = page.split('id="run-panel"')[1].split('id="job-progress"')[0]
    assert " disabled>" not in panel
    assert 'hx-trigger="every 2s"' not in panel
    poll = as_user(owner).get(url(models, "console:job", job.pk), **HX)
    assert poll.status_code == 286


def test_stop_asks_the_play_to_end_after_its_round(as_user, owner, models):
    play = Job.objects.create(
        experiment=models, kind="play", status="running", result={"rounds": 5, "played": 2}
    )
    response = as_user(owner).post(url(models, "console:play_stop", play.pk), **HX)
    assert response.status_code == 200
    play.refresh_from_db()
    assert play.result["stop"] is True and play.status == "running"
    assert "Stopping after the round being played" in response.content.decode()


def test_stopping_a_finished_play_says_so_and_changes_nothing(as_user, owner, models):
    play = Job.objects.create(experiment=models, kind="play", status="succeeded", result={})
    response = as_user(owner).post(url(models, "console:play_stop", play.pk), **HX)
    assert response.status_code == 422
    assert "finished already" in response.content.decode()
    play.refresh_from_db()
    assert play.result == {}


@pytest.mark.parametrize("persona,status", [("player", 403), ("stranger", 404), ("anonymous", 302)])
def test_only_editors_play_or_stop(as_user, personas, models, persona, status):
    play = Job.objects.create(experiment=models, kind="play", status="running", result={})
    client = as_user(personas[persona])
    assert client.post(url(models, "console:play"), {"rounds": "2"}).status_code == status
    assert client.post(url(models, "console:play_stop", play.pk)).status_code == status
    play.refresh_from_db()
    assert play.result == {}
    assert Job.objects.filter(experiment=models, kind__in=["play", "round"]).count() == 1
    assert not Turn.objects.filter(experiment=models, round__gt=1).exists()


def test_every_command_says_what_it_does_and_the_memory_ones_ask_first(as_user, owner, models):
    page = as_user(owner).get(url(models)).content.decode()
    for command in ("round", "checkpoint", "compress", "clear"):
        assert f'id="cmd-help-{command}"' in page
    assert 'hx-confirm="Run /checkpoint?' in page
    assert 'hx-confirm="Run /compress?' in page
    assert 'hx-confirm="Run /clear? Agents lose the transcript' in page
    round_form = page.split('value="round"')[0].rsplit("<form", 1)[1]
    assert "hx-confirm" not in round_form


def test_clear_still_runs_when_confirmed(as_user, owner, models):
    response = as_user(owner).post(url(models, "console:command_post"), {"command": "clear"}, **HX)
    assert response.status_code == 200
    assert ContextEvent.objects.filter(experiment=models, command="clear").count() == 1


def test_after_a_round_the_composer_posts_into_the_open_round(
    as_user, owner, models, django_capture_on_commit_callbacks
):
    """The bug: the composer's Round field kept the old round, so the DM's next post went
    into the closed round. Now a blank round is the open round when the post is stored."""
    client = as_user(owner)
    page = client.get(url(models)).content.decode()
    composer = page.split('id="composer"')[1]
    round_input = composer.split('name="round"')[1].split(">")[0]
    assert "value=" not in round_input  # no stale number to send back
    assert 'id="composer-round">' in page
    before = models.current_round
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url(models, "console:command_post"), {"command": "round"}, **HX)
    client.post(
        url(models, "console:turn_post"),
        {"kind": "narrative", "content": "AFTER-THE-ROUND", "round": ""},
        **HX,
    )
    models.refresh_from_db()
    assert models.current_round == before + 1
    assert Turn.objects.get(content="AFTER-THE-ROUND").round == models.current_round
