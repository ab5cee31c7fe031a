"""`GET /api/experiments/{id}/usage/`: tokens per agent and per round, owner and staff only.

And `PATCH …/participants/{pid}/` plus the create body: a participant's model settings
(temperature 0–2, max output tokens 1–65536) with field-named 400s that store nothing.
"""

from __future__ import annotations

import pytest

from campaigns.models import ModelCall, Participant
from campaigns.services.usage import model_call_record
from context_engine.llm import MAX_OUTPUT_TOKENS_LIMIT, Usage

pytestmark = pytest.mark.django_db

MESSAGES = [
    {"role": "system", "content": "Stable prefix. " * 20},
    {"role": "user", "content": "Go"},
]


def url(experiment, query: str = "") -> str:
    return f"/api/experiments/{experiment.pk}/usage/{query}"


def record(experiment, key, round, role, tokens_in, cached, out):
    model_call_record(
        experiment=experiment,
        key=key,
        round=round,
        role=role,
        step="act",
        model="gemini-2.5-flash",
        messages=MESSAGES,
        usage=Usage(tokens_in, cached, out),
    )


@pytest.fixture
def used(campaign):
    record(campaign, "1-dm", 1, "DM", 400, 0, 40)
    record(campaign, "1-th", 1, "Thorin", 300, 0, 30)
    record(campaign, "2-dm", 2, "DM", 500, 300, 50)
    record(campaign, "2-th", 2, "Thorin", 350, 200, 35)
    return campaign


def test_the_owner_reads_usage_per_agent_for_a_round_with_the_saving(api, used, owner):
    response = api(owner).get(url(used, "?round=2"))
    assert response.status_code == 200
    data = response.json()
    assert data["round"] == 2
    agents = {a["role"]: a for a in data["agents"]}
    assert agents["DM"]["tokens_in"] == 500 and agents["DM"]["saving_tokens"] == 300
    assert agents["DM"]["prefix_stable_share"] == 1.0  # same bytes as its round-1 call
    assert agents["Thorin"]["tokens_cached"] == 200
    assert data["total"]["saving_tokens"] == 500
    assert [r["round"] for r in data["rounds"]] == [2, 1]
    assert data["rounds"][1]["tokens_in"] == 700


def test_without_a_round_the_whole_campaign_is_summed(api, used, staff_user):
    data = api(staff_user).get(url(used)).json()
    assert data["round"] is None
    assert data["total"]["calls"] == 4 and data["total"]["tokens_in"] == 1550


@pytest.mark.parametrize(
    ("persona", "status"), [("player", 403), ("stranger", 404), ("anonymous", 401)]
)
def test_nobody_else_reads_any_agents_usage(api, used, player, stranger, persona, status):
    user = {"player": player, "stranger": stranger, "anonymous": None}[persona]
    response = api(user).get(url(used, "?round=2"))
    assert response.status_code == status
    body = response.content.decode()
    assert "tokens_in" not in body and "Thorin" not in body and "DM" not in body


@pytest.mark.parametrize("bad", ["x", "-1", "1.5", "99999999999"])
def test_a_bad_round_is_a_400_naming_round(api, used, owner, bad):
    response = api(owner).get(url(used, f"?round={bad}"))
    assert response.status_code == 400
    assert "round" in response.json()


def test_wrong_method_and_missing_experiment(api, used, owner):
    assert api(owner).post(url(used), {}, format="json").status_code == 405
    assert api(owner).get("/api/experiments/999999/usage/").status_code == 404
    assert api(owner).get("/api/experiments/abc/usage/").status_code == 404
    assert ModelCall.objects.count() == 4


def test_a_round_with_no_calls_is_empty_not_an_error(api, used, owner):
    data = api(owner).get(url(used, "?round=7")).json()
    assert data["agents"] == [] and data["total"]["calls"] == 0


# -- participant model settings ------------------------------------------------------------


def participants_url(experiment, pid=None) -> str:
    base = f"/api/experiments/{experiment.pk}/participants/"
    return base if pid is None else f"{base}{pid}/"


def test_a_participant_is_created_with_its_model_settings(
    api, campaign, owner, settings, gemini_standin
):
    settings.GEMINI_API_KEY, settings.GEMINI_BASE_URL = "standin-key", gemini_standin.base_url
    body = {
        "role": "Mira",
        "model": "gemini-2.5-flash",
        "temperature": 0.7,
        "max_output_tokens": 512,
    }
    response = api(owner).post(participants_url(campaign), body, format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["temperature"], response.json()["max_output_tokens"]) == (0.7, 512)
    mira = Participant.objects.get(experiment=campaign, role="Mira")
    assert (mira.temperature, mira.max_output_tokens) == (0.7, 512)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature", 2.5),
        ("temperature", -0.1),
        ("temperature", "0.5"),
        ("temperature", True),
        ("max_output_tokens", 0),
        ("max_output_tokens", MAX_OUTPUT_TOKENS_LIMIT + 1),
        ("max_output_tokens", 1.5),
        ("max_output_tokens", "100"),
    ],
)
def test_out_of_range_settings_are_400s_naming_the_field_and_store_nothing(
    api, campaign, owner, field, value
):
    before = Participant.objects.count()
    created = api(owner).post(
        participants_url(campaign), {"role": "Mira", field: value}, format="json"
    )
    assert created.status_code == 400 and list(created.json()) == [field]
    dm = campaign.participants.get(role="DM")
    patched = api(owner).patch(participants_url(campaign, dm.pk), {field: value}, format="json")
    assert patched.status_code == 400 and list(patched.json()) == [field]
    dm.refresh_from_db()
    assert (dm.temperature, dm.max_output_tokens) == (None, None)
    assert Participant.objects.count() == before


def test_the_owner_patches_model_settings_and_null_restores_the_default(
    api, campaign, owner, settings, openai_standin
):
    settings.OPENAI_BASE_URL = openai_standin.base_url
    dm = campaign.participants.get(role="DM")
    client = api(owner)
    body = {"model": "openai:local", "temperature": 0, "max_output_tokens": MAX_OUTPUT_TOKENS_LIMIT}
    response = client.patch(participants_url(campaign, dm.pk), body, format="json")
    assert response.status_code == 200, response.json()
    dm.refresh_from_db()
    assert (dm.model, dm.temperature, dm.max_output_tokens) == (
        "openai:local",
        0.0,
        MAX_OUTPUT_TOKENS_LIMIT,
    )
    client.patch(participants_url(campaign, dm.pk), {"temperature": None}, format="json")
    dm.refresh_from_db()
    assert (dm.temperature, dm.max_output_tokens) == (None, MAX_OUTPUT_TOKENS_LIMIT)


def test_only_editors_patch_a_participant_and_ids_are_checked(
    api, campaign, owner, player, stranger
):
    dm = campaign.participants.get(role="DM")
    body = {"temperature": 1.0}
    assert (
        api(player).patch(participants_url(campaign, dm.pk), body, format="json").status_code == 403
    )
    assert (
        api(stranger).patch(participants_url(campaign, dm.pk), body, format="json").status_code
        == 404
    )
    assert (
        api(owner).patch(participants_url(campaign, 999999), body, format="json").status_code == 404
    )
    assert api(owner).patch(participants_url(campaign, "x"), body, format="json").status_code == 404
    assert api(owner).get(participants_url(campaign, dm.pk)).status_code == 405
    unknown = api(owner).patch(participants_url(campaign, dm.pk), {"colour": 1}, format="json")
    assert unknown.status_code == 400 and "colour" in unknown.json()
    dm.refresh_from_db()
    assert dm.temperature is None


def test_a_players_view_of_a_round_job_carries_no_usage(
    api, campaign, owner, player, django_capture_on_commit_callbacks
):
    campaign.participants.update(model="offline")
    with django_capture_on_commit_callbacks(execute=True):
        started = api(owner).post(f"/api/experiments/{campaign.pk}/rounds/", {}, format="json")
    task = f"/api/tasks/{started.json()['task_id']}/"
    assert api(owner).get(task).json()["result"]["usage"]["total"]["calls"] >= 3
    seen = api(player).get(task)
    assert seen.status_code == 200
    assert "usage" not in seen.content.decode() and "tokens_in" not in seen.content.decode()
