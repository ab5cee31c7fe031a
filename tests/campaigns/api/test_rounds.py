"""`POST /api/experiments/{id}/rounds/`: run a round as background work, poll its task."""

from __future__ import annotations

import pytest

from campaigns.models import Job, Participant, Turn

pytestmark = pytest.mark.django_db


def url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/rounds/"


@pytest.fixture
def offline_cast(campaign):
    """The conftest campaign with every agent played by the offline model."""
    Participant.objects.filter(experiment=campaign).update(model="offline")
    return campaign


def test_a_round_runs_and_its_task_reports_success(
    api, offline_cast, owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api(owner).post(url(offline_cast), {}, format="json")
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["task_id"])
    assert (job.kind, job.experiment_id, job.user) == ("round", offline_cast.pk, owner)
    speakers = set(Turn.objects.filter(experiment=offline_cast).values_list("speaker", flat=True))
    assert {"DM", "Thorin", "Cassia"} <= speakers
    polled = api(owner).get(f"/api/tasks/{job.pk}/").json()
    assert polled["status"] == "succeeded"
    assert polled["progress"] == 100


def test_an_empty_body_is_fine_too(api, offline_cast, owner):
    response = api(owner).post(url(offline_cast))
    assert response.status_code == 202
    assert Job.objects.filter(experiment=offline_cast, kind="round").count() == 1


def test_a_second_round_while_one_runs_is_a_409(api, offline_cast, owner):
    Job.objects.create(experiment=offline_cast, kind=Job.Kind.ROUND, status=Job.Status.RUNNING)
    response = api(owner).post(url(offline_cast), {}, format="json")
    assert response.status_code == 409
    assert "round" in response.json()
    assert Job.objects.filter(experiment=offline_cast).count() == 1


def test_an_all_human_cast_cannot_run_a_round(api, campaign, owner):
    response = api(owner).post(url(campaign), {}, format="json")
    assert response.status_code == 400
    assert "round" in response.json()
    assert not Job.objects.exists()
    assert not Turn.objects.exists()


def test_unknown_fields_are_400(api, offline_cast, owner):
    response = api(owner).post(url(offline_cast), {"rounds": 3}, format="json")
    assert response.status_code == 400
    assert "rounds" in response.json()
    assert not Job.objects.exists()


def test_players_cannot_start_rounds_and_outsiders_get_404(api, offline_cast, player, stranger):
    assert api(player).post(url(offline_cast), {}, format="json").status_code == 403
    assert api(stranger).post(url(offline_cast), {}, format="json").status_code == 404
    assert not Job.objects.exists()


def test_rounds_edges(api, offline_cast, owner):
    assert api(owner).get(url(offline_cast)).status_code == 405
    assert api(owner).post("/api/experiments/919191/rounds/", {}, format="json").status_code == 404
    assert not Job.objects.exists()
