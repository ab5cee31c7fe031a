"""`POST /api/experiments/{id}/turns/{tid}/reveal/`: widen a turn's audience (ask 7)."""

from __future__ import annotations

import pytest

from campaigns.models import Turn, VisibilityChange
from tests.factories import make_turn, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def whisper(campaign):
    return make_turn(
        campaign,
        speaker="Cassia",
        kind="whisper",
        content="Cassia, to the DM: the Morrowglass is cracked.",
        visibility=["Cassia", "DM"],
    )


def url(campaign, tid) -> str:
    return f"/api/experiments/{campaign.pk}/turns/{tid}/reveal/"


def test_the_owner_reveals_a_whisper_to_a_player_who_then_reads_it(
    api, campaign, owner, player, whisper, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api(owner).post(
            url(campaign, whisper.pk), {"visibility": ["Cassia", "DM", "Thorin"]}, format="json"
        )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["turn"] == whisper.pk and body["old_visibility"] == ["Cassia", "DM"]
    assert body["new_visibility"] == ["Cassia", "DM", "Thorin"]
    turns = api(player).get(f"/api/experiments/{campaign.pk}/turns/").json()["results"]
    assert "Morrowglass" in " ".join(t["content"] for t in turns)


def test_null_reveals_to_everyone(api, campaign, owner, whisper):
    response = api(owner).post(url(campaign, whisper.pk), {"visibility": None}, format="json")
    assert response.status_code == 201
    assert Turn.objects.get(pk=whisper.pk).visibility is None


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"visibility": ["Cassia"]}, "visibility"),
        ({"visibility": ["Cassia", "DM"]}, "visibility"),
        ({"visibility": ["Cassia", "DM", "Ghost"]}, "visibility"),
        ({"visibility": []}, "visibility"),
        ({}, "visibility"),
        ({"visibility": None, "visiblity": None}, "visiblity"),
    ],
)
def test_a_bad_reveal_is_a_400_naming_the_field_and_stores_nothing(
    api, campaign, owner, whisper, payload, field
):
    response = api(owner).post(url(campaign, whisper.pk), payload, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not VisibilityChange.objects.exists()
    assert Turn.objects.get(pk=whisper.pk).visibility == ["Cassia", "DM"]


def test_a_player_may_not_reveal_and_an_outsider_gets_404(api, campaign, player, whisper):
    assert (
        api(player).post(url(campaign, whisper.pk), {"visibility": None}, format="json").status_code
        == 403
    )
    stranger = make_user("reveal_stranger")
    assert (
        api(stranger)
        .post(url(campaign, whisper.pk), {"visibility": None}, format="json")
        .status_code
        == 404
    )
    assert api(None).post(
        url(campaign, whisper.pk), {"visibility": None}, format="json"
    ).status_code in (401, 403)
    assert not VisibilityChange.objects.exists()


def test_a_missing_or_foreign_turn_is_404_and_get_is_405(api, campaign, owner, whisper):
    client = api(owner)
    assert (
        client.post(url(campaign, 999999), {"visibility": None}, format="json").status_code == 404
    )
    assert client.post(url(campaign, "abc"), {"visibility": None}, format="json").status_code == 404
    assert client.get(url(campaign, whisper.pk)).status_code == 405
    assert not VisibilityChange.objects.exists()
