"""`/api/experiments/` and `/api/experiments/{id}/`: list, create, read, edit, delete."""

from __future__ import annotations

import pytest

from campaigns.models import Experiment, Participant, Turn, WorldState
from tests.factories import make_experiment, make_turn, make_user

pytestmark = pytest.mark.django_db

URL = "/api/experiments/"


def detail(experiment_id) -> str:
    return f"{URL}{experiment_id}/"


def test_the_list_shows_only_experiments_the_user_owns_or_plays_in(api, campaign, player):
    mine = make_experiment(owner=player, name="Thorin's own")
    hidden = make_experiment(owner=make_user("someone"), name="Not for Thorin")
    response = api(player).get(URL)
    assert response.status_code == 200
    ids = {item["id"] for item in response.json()["results"]}
    assert ids == {campaign.pk, mine.pk}
    assert hidden.pk not in ids


def test_staff_list_every_experiment(api, campaign, staff_user):
    other = make_experiment(owner=make_user("someone"))
    ids = {item["id"] for item in api(staff_user).get(URL).json()["results"]}
    assert {campaign.pk, other.pk} <= ids


def test_the_list_is_paginated(api, owner):
    for index in range(3):
        make_experiment(owner=owner, name=f"E{index}")
    first = api(owner).get(URL, {"page_size": 2}).json()
    assert first["count"] == 3
    assert len(first["results"]) == 2
    assert first["next"]
    second = api(owner).get(URL, {"page_size": 2, "page": 2}).json()
    assert len(second["results"]) == 1
    seen = {e["id"] for e in first["results"]} | {e["id"] for e in second["results"]}
    assert seen == set(Experiment.objects.values_list("pk", flat=True))


def test_a_page_past_the_end_is_404(api, campaign, owner):
    assert api(owner).get(URL, {"page": 99}).status_code == 404


def test_create_stores_the_experiment_owned_by_the_caller_with_a_world_state(api, stranger):
    body = {
        "name": "Salt and Ash",
        "hook": "A lighthouse goes dark.",
        "rules": "Roll low.",
        "config": {"strategy": "triage", "hot_window_rounds": 3},
    }
    response = api(stranger).post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    created = Experiment.objects.get(pk=response.json()["id"])
    assert (created.name, created.hook, created.rules) == (
        "Salt and Ash",
        "A lighthouse goes dark.",
        "Roll low.",
    )
    assert created.config == {"strategy": "triage", "hot_window_rounds": 3}
    assert created.owner == stranger
    assert created.status == Experiment.Status.DRAFT
    assert WorldState.objects.filter(experiment=created).exists()
    assert response.json()["owner"] == stranger.pk


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "X", "config": {"strategy": "psychic"}}, "config.strategy"),
        ({"name": "X", "config": {"colour": "red"}}, "config.colour"),
        ({"name": "X", "config": {"hot_window_rounds": 0}}, "config.hot_window_rounds"),
        ({"name": "X", "config": {"budgets": {"frozen": -5}}}, "config.budgets.frozen"),
        ({"name": "X", "config": {"budgets": {"attic": 5}}}, "config.budgets.attic"),
        ({"name": "X", "config": {"max_content_chars": "many"}}, "config.max_content_chars"),
        ({"name": "X", "config": {"human_timeout_s": 0}}, "config.human_timeout_s"),
        ({"name": "X", "config": {"human_timeout_s": 9}}, "config.human_timeout_s"),
        ({"name": "X", "config": {"human_timeout_s": 10**9}}, "config.human_timeout_s"),
        ({"name": "X", "config": {"human_timeout_s": "soon"}}, "config.human_timeout_s"),
        ({"name": "X", "config": {"human_timeout_s": True}}, "config.human_timeout_s"),
        ({"name": "X", "config": {"human_timeout_s": 60.5}}, "config.human_timeout_s"),
        ({"name": "X", "config": {"human_timeout_policy": "wait"}}, "config.human_timeout_policy"),
        ({"name": "X", "config": {"human_timeout_policy": None}}, "config.human_timeout_policy"),
        ({"name": "X", "config": ["strategy"]}, "config"),
        ({"name": "X", "status": "exploded"}, "status"),
        ({"name": "X", "owner": 1}, "owner"),
        ({"name": "X", "nmae": "typo"}, "nmae"),
    ],
)
def test_create_rejects_bad_bodies_naming_the_field_and_stores_nothing(api, owner, body, field):
    before = Experiment.objects.count()
    response = api(owner).post(URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert Experiment.objects.count() == before


def test_malformed_json_is_a_400_not_a_500(api, owner):
    response = api(owner).post(URL, data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert "detail" in response.json()
    assert not Experiment.objects.exists()


def test_a_json_list_body_is_a_400(api, owner):
    response = api(owner).post(URL, data="[1, 2]", content_type="application/json")
    assert response.status_code == 400
    assert "non_field_errors" in response.json()


def test_a_form_body_is_unsupported_media_type(api, owner):
    response = api(owner).post(URL, {"name": "Form"})  # multipart
    assert response.status_code == 415
    assert not Experiment.objects.exists()


def test_read_one_experiment(api, campaign, owner, player):
    for user in (owner, player):
        response = api(user).get(detail(campaign.pk))
        assert response.status_code == 200
        assert response.json()["name"] == campaign.name
        assert response.json()["hook"] == campaign.hook


@pytest.mark.parametrize("bad_id", ["999999", "abc", "0", "-1", str(2**70), "1.5"])
def test_bad_or_missing_ids_are_404(api, campaign, owner, bad_id):
    response = api(owner).get(detail(bad_id))
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")


def test_an_outsider_gets_404_not_403(api, campaign, stranger):
    assert api(stranger).get(detail(campaign.pk)).status_code == 404


def test_patch_changes_only_the_given_fields(api, campaign, owner):
    response = api(owner).patch(
        detail(campaign.pk), {"name": "Renamed", "config": {"strategy": "tiered"}}, format="json"
    )
    assert response.status_code == 200, response.json()
    campaign.refresh_from_db()
    assert campaign.name == "Renamed"
    assert campaign.config == {"strategy": "tiered"}
    assert campaign.hook == "A door appears at low tide."


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"config": {"unknown_key": 1}}, "config.unknown_key"),
        ({"name": ""}, "name"),
        ({"status": "nope"}, "status"),
        ({"id": 5}, "id"),
    ],
)
def test_patch_rejects_bad_values_and_changes_nothing(api, campaign, owner, body, field):
    response = api(owner).patch(detail(campaign.pk), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    fresh = Experiment.objects.get(pk=campaign.pk)
    assert (fresh.name, fresh.config, fresh.status) == (campaign.name, campaign.config, "draft")


def test_a_player_may_not_patch_or_delete(api, campaign, player):
    assert (
        api(player).patch(detail(campaign.pk), {"name": "Mine"}, format="json").status_code == 403
    )
    assert api(player).delete(detail(campaign.pk)).status_code == 403
    campaign.refresh_from_db()
    assert campaign.name != "Mine"


def test_delete_removes_the_experiment_and_everything_under_it(api, campaign, owner):
    make_turn(campaign)
    response = api(owner).delete(detail(campaign.pk))
    assert response.status_code == 204
    assert not Experiment.objects.filter(pk=campaign.pk).exists()
    assert not Turn.objects.filter(experiment_id=campaign.pk).exists()
    assert not Participant.objects.filter(experiment_id=campaign.pk).exists()
    assert api(owner).get(detail(campaign.pk)).status_code == 404


def test_staff_may_edit_any_experiment(api, campaign, staff_user):
    response = api(staff_user).patch(detail(campaign.pk), {"status": "running"}, format="json")
    assert response.status_code == 200
    campaign.refresh_from_db()
    assert campaign.status == "running"


@pytest.mark.parametrize("method", ["put", "post"])
def test_wrong_methods_on_one_experiment_are_405(api, campaign, owner, method):
    response = getattr(api(owner), method)(detail(campaign.pk), {"name": "X"}, format="json")
    assert response.status_code == 405
    campaign.refresh_from_db()
    assert campaign.name != "X"


def test_wrong_method_on_the_list_is_405(api, owner):
    assert api(owner).delete(URL).status_code == 405
