"""`GET …/facts/` (visibility-filtered) and `GET, POST …/arena/` (owner and staff only)."""

from __future__ import annotations

import copy

import pytest

from campaigns.models import ArenaRun, Experiment, Job
from campaigns.services import transcripts
from campaigns.services.arena import arena_job_run
from context_engine.arena.generate import generate_campaign

pytestmark = pytest.mark.django_db


def facts_url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/facts/"


def arena_url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/arena/"


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [fact["id"] for fact in response.json()["results"]]


def test_facts_are_listed_by_audience(api, secrets_campaign, owner, player, judge):
    experiment = secrets_campaign.experiment
    assert _ids(api(owner).get(facts_url(experiment))) == ["public", "thorin", "cassia", "dm"]
    assert _ids(api(player).get(facts_url(experiment))) == ["public", "thorin"]
    # ?as= narrows an omniscient reader, never widens a player.
    assert _ids(api(owner).get(facts_url(experiment), {"as": "Cassia"})) == ["public", "cassia"]
    assert _ids(api(player).get(facts_url(experiment), {"as": "DM"})) == ["public", "thorin"]
    assert _ids(api(judge).get(facts_url(experiment))) == ["public", "thorin", "cassia", "dm"]
    first = api(owner).get(facts_url(experiment)).json()["results"][1]
    assert first == {
        "id": "thorin",
        "round": 1,
        "audience": ["DM", "Thorin"],
        "answer": ["VIS-thorin-fact"],
        "question": "What did Thorin whisper?",
    }


def test_facts_of_an_unknown_or_foreign_experiment_are_404(api, secrets_campaign, stranger):
    assert api(stranger).get(facts_url(secrets_campaign.experiment)).status_code == 404
    assert api(stranger).get("/api/experiments/999999/facts/").status_code == 404
    response = api(stranger).post(facts_url(secrets_campaign.experiment), {}, format="json")
    assert response.status_code in (404, 405)


@pytest.fixture
def generated(owner):
    data = generate_campaign(rounds=24, players=2, seed=11)
    return transcripts.import_transcript(data=copy.deepcopy(data), owner=owner)


def test_the_owner_runs_the_arena_and_reads_the_stored_report(
    api, owner, generated, django_capture_on_commit_callbacks
):
    body = {"strategies": ["layered", "sliding_window"], "budgets": [4000, 13000], "every": 8}
    with django_capture_on_commit_callbacks(execute=True):
        response = api(owner).post(arena_url(generated), body, format="json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["task_id"])
    assert job.kind == Job.Kind.ARENA
    assert job.status == Job.Status.SUCCEEDED, job.message  # eager Celery in tests
    assert job.progress == 100 and "recommended" in job.message
    run = ArenaRun.objects.get(job=job)
    assert run.report["checkpoints"] == [8, 16, 24]
    assert {(r["strategy"], r["budget"]) for r in run.report["results"]} == {
        ("layered", 4000),
        ("layered", 13000),
        ("sliding_window", 4000),
        ("sliding_window", 13000),
    }
    assert run.details["facts_source"] == "declared"
    listed = api(owner).get(arena_url(generated)).json()["results"]
    assert [r["id"] for r in listed] == [run.pk]
    assert listed[0]["task_id"] == str(job.pk)
    assert set(listed[0]["report"]) == {
        "experiment",
        "checkpoints",
        "full_history_tokens",
        "results",
        "recommended",
    }
    assert listed[0]["report"]["recommended"] == run.report["recommended"]
    task = api(owner).get(f"/api/tasks/{job.pk}/").json()
    assert task["result"]["arena_run"] == run.pk


def test_running_an_arena_job_twice_stores_one_report(
    api, owner, generated, django_capture_on_commit_callbacks
):
    body = {"strategies": ["sliding_window"], "budgets": [4000]}
    with django_capture_on_commit_callbacks(execute=True):
        response = api(owner).post(arena_url(generated), body, format="json")
    job = Job.objects.get(pk=response.json()["task_id"])
    again = arena_job_run(job=job)
    assert again.status == Job.Status.SUCCEEDED
    assert ArenaRun.objects.filter(job=job).count() == 1
    assert ArenaRun.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"strategies": ["nope"]}, "strategies"),
        ({"strategies": []}, "strategies"),
        ({"budgets": [10]}, "budgets"),
        ({"budgets": ["many"]}, "budgets"),
        ({"every": 0}, "every"),
        ({"roles": ["Nobody"]}, "roles"),
        ({"judge": "gpt-9"}, "judge"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_arena_request_names_the_field_and_starts_nothing(api, owner, generated, body, field):
    response = api(owner).post(arena_url(generated), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert Job.objects.count() == 0 and ArenaRun.objects.count() == 0


def test_players_and_strangers_cannot_see_or_start_arena_runs(
    api, generated, owner, stranger, staff_user
):
    from tests.factories import make_user

    player = make_user("arena_player")
    generated.participants.filter(role="Thorin").update(user=player)
    assert api(player).get(arena_url(generated)).status_code == 403
    assert api(player).post(arena_url(generated), {}, format="json").status_code == 403
    assert api(stranger).get(arena_url(generated)).status_code == 404
    assert api(stranger).post(arena_url(generated), {}, format="json").status_code == 404
    assert api(staff_user).get(arena_url(generated)).status_code == 200
    assert Job.objects.count() == 0
    assert Experiment.objects.filter(pk=generated.pk).exists()


def test_importing_a_bad_fact_is_a_400_naming_it_and_stores_nothing(api, owner):
    data = generate_campaign(rounds=20, players=2, seed=3)
    data["facts"][2]["answer"] = "not a list"
    response = api(owner).post("/api/import/", data, format="json")
    assert response.status_code == 400
    assert "facts[2].answer" in response.json()
    assert Experiment.objects.count() == 0


def test_facts_round_trip_through_the_api_byte_identically(api, owner):
    text = transcripts.dumps(generate_campaign(rounds=20, players=2, seed=3))
    created = api(owner).post("/api/import/", text.encode(), content_type="application/json")
    assert created.status_code == 201
    first = api(owner).get(f"/api/experiments/{created.json()['id']}/export/").content
    assert first == text.encode()
    again = api(owner).post("/api/import/", first, content_type="application/json")
    assert api(owner).get(f"/api/experiments/{again.json()['id']}/export/").content == first
