"""`…/commands/` (/checkpoint, /compress, /clear) and `GET /api/tasks/{task_id}/`."""

from __future__ import annotations

import uuid

import pytest

from campaigns.models import ContextEvent, Job, Summary
from tests.factories import make_experiment, make_turn, make_user

pytestmark = pytest.mark.django_db


def commands_url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/commands/"


def task_url(task_id) -> str:
    return f"/api/tasks/{task_id}/"


@pytest.fixture
def played(campaign):
    for round_ in (1, 2, 3):
        make_turn(campaign, round=round_, content=f"Round {round_}: the Geometers advance.")
    return campaign


def test_checkpoint_runs_as_a_task_the_owner_can_poll(
    api, played, owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api(owner).post(commands_url(played), {"command": "checkpoint"}, format="json")
    assert response.status_code == 202, response.json()
    task_id = response.json()["task_id"]
    job = Job.objects.get(pk=task_id)
    assert (job.experiment_id, job.kind, job.user) == (played.pk, "checkpoint", owner)
    event = ContextEvent.objects.get(experiment=played)
    assert (event.command, event.seq, event.cleared_without_checkpoint) == ("checkpoint", 3, False)
    polled = api(owner).get(task_url(task_id))
    assert polled.status_code == 200
    assert polled.json()["status"] == "succeeded"
    assert polled.json()["progress"] == 100
    assert polled.json()["result"]["event"] == event.pk
    assert Summary.objects.filter(experiment=played).exists()  # the digest was folded


def test_clear_records_that_it_cleared_without_a_checkpoint(api, played, owner):
    response = api(owner).post(commands_url(played), {"command": "clear"}, format="json")
    assert response.status_code == 202
    assert response.json()["status"] == "succeeded"
    event = ContextEvent.objects.get(experiment=played)
    assert (event.command, event.cleared_without_checkpoint) == ("clear", True)
    assert not Summary.objects.filter(experiment=played).exists()


def test_a_command_for_one_role(api, played, owner):
    response = api(owner).post(
        commands_url(played), {"command": "clear", "role": "Thorin"}, format="json"
    )
    assert response.status_code == 202
    assert ContextEvent.objects.get(experiment=played).role == "Thorin"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "command"),
        ({"command": "explode"}, "command"),
        ({"command": "checkpoint", "role": "Ghost"}, "role"),
        ({"command": "checkpoint", "now": True}, "now"),
    ],
)
def test_bad_commands_are_400_and_record_nothing(api, played, owner, body, field):
    response = api(owner).post(commands_url(played), body, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert not ContextEvent.objects.exists()
    assert not Job.objects.exists()


def test_players_may_not_run_commands_and_outsiders_get_404(api, played, player, stranger):
    assert (
        api(player).post(commands_url(played), {"command": "clear"}, format="json").status_code
        == 403
    )
    assert (
        api(stranger).post(commands_url(played), {"command": "clear"}, format="json").status_code
        == 404
    )
    assert not ContextEvent.objects.exists()
    assert not Job.objects.exists()


def test_commands_edges(api, played, owner):
    assert api(owner).get(commands_url(played)).status_code == 405
    missing = api(owner).post(
        "/api/experiments/565656/commands/", {"command": "clear"}, format="json"
    )
    assert missing.status_code == 404
    assert not Job.objects.exists()


@pytest.fixture
def job(campaign, owner):
    return Job.objects.create(
        experiment=campaign,
        kind=Job.Kind.ROUND,
        status=Job.Status.RUNNING,
        progress=40,
        message="Thorin is thinking.",
        result={"turns": [1, 2]},
        user=owner,
    )


def test_the_task_shape(api, job, owner):
    body = api(owner).get(task_url(job.pk)).json()
    assert body["task_id"] == str(job.pk)
    assert (body["kind"], body["status"], body["progress"], body["message"]) == (
        "round",
        "running",
        40,
        "Thorin is thinking.",
    )
    assert body["result"] == {"turns": [1, 2]}
    assert body["experiment"] == job.experiment_id


def test_a_player_sees_progress_but_not_the_result(api, job, player):
    body = api(player).get(task_url(job.pk)).json()
    assert body["progress"] == 40
    assert body["result"] is None


def test_tasks_of_hidden_experiments_are_404(api, job, stranger, staff_user):
    assert api(stranger).get(task_url(job.pk)).status_code == 404
    assert api(staff_user).get(task_url(job.pk)).status_code == 200
    other_owner = make_user("another_owner")
    make_experiment(owner=other_owner)
    assert api(other_owner).get(task_url(job.pk)).status_code == 404


@pytest.mark.parametrize("task_id", [uuid.uuid4(), "not-a-uuid", "123"])
def test_missing_or_malformed_task_ids_are_404(api, job, owner, task_id):
    response = api(owner).get(task_url(task_id))
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")


def test_tasks_are_read_only(api, job, owner):
    assert api(owner).delete(task_url(job.pk)).status_code == 405
    assert api(owner).post(task_url(job.pk), {}, format="json").status_code == 405
    assert Job.objects.filter(pk=job.pk).exists()
