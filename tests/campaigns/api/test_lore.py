"""`/api/experiments/{id}/lore/` and `…/lore/{lid}/`: the World Bible by audience."""

from __future__ import annotations

import pytest

from campaigns.models import LoreEntry, LoreRevision

pytestmark = pytest.mark.django_db


def url(experiment, lid=None) -> str:
    base = f"/api/experiments/{experiment.pk}/lore/"
    return base if lid is None else f"{base}{lid}/"


def _terms(response) -> set[str]:
    assert response.status_code == 200, response.json()
    return {entry["term"] for entry in response.json()["results"]}


def test_each_reader_sees_the_entries_of_their_audience(api, secrets_campaign, owner, player):
    experiment = secrets_campaign.experiment
    everything = {"ZQXdmlore", "ZQXcassialore", "VISpubliclore"}
    assert _terms(api(owner).get(url(experiment))) == everything
    assert _terms(api(owner).get(url(experiment), {"as": "Cassia"})) == {
        "ZQXcassialore",
        "VISpubliclore",
    }
    assert _terms(api(player).get(url(experiment))) == {"VISpubliclore"}
    assert _terms(api(player).get(url(experiment), {"as": "DM"})) == {"VISpubliclore"}


def test_one_entry_is_readable_only_within_its_audience(api, secrets_campaign, owner, player):
    experiment = secrets_campaign.experiment
    hidden = secrets_campaign.lore["dm_lore"]
    public = secrets_campaign.lore["public_lore"]
    assert api(owner).get(url(experiment, hidden.pk)).json()["term"] == "ZQXdmlore"
    # A player knows entries by their position among the entries they read.
    shown = {e["term"]: e["id"] for e in api(player).get(url(experiment)).json()["results"]}
    assert shown == {"VISpubliclore": 1}
    assert api(player).get(url(experiment, 1)).json()["term"] == "VISpubliclore"
    for number in {hidden.pk, public.pk, 2, 3}:
        response = api(player).get(url(experiment, number))
        assert response.status_code == 404 or response.json()["term"] == "VISpubliclore"


def test_the_dm_creates_an_entry_with_a_revision(api, campaign, owner):
    body = {
        "term": "Tide Codex",
        "category": "artifact",
        "definition": "A book that reads the sea.",
        "audience": ["DM", "Cassia"],
    }
    response = api(owner).post(url(campaign), body, format="json")
    assert response.status_code == 201, response.json()
    entry = LoreEntry.objects.get(pk=response.json()["id"])
    assert (entry.term, entry.category, entry.definition) == (
        "Tide Codex",
        "artifact",
        "A book that reads the sea.",
    )
    assert entry.audience == ["Cassia", "DM"]
    assert (entry.origin, entry.status) == ("dm", "confirmed")
    assert LoreRevision.objects.filter(entry=entry).count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"term": ""}, "term"),
        ({"term": "X", "audience": ["Ghost"]}, "audience"),
        ({"term": "X", "audience": []}, "audience"),
        ({"term": "X", "audience": "DM"}, "audience"),
        ({"term": "X", "category": "weather"}, "category"),
        ({"term": "X", "locked": True}, "locked"),
        ({"definition": "no term"}, "term"),
    ],
)
def test_bad_entries_are_400_naming_the_field(api, campaign, owner, body, field):
    response = api(owner).post(url(campaign), body, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert not LoreEntry.objects.exists()


def test_a_duplicate_term_for_the_same_audience_is_400(api, secrets_campaign, owner):
    experiment = secrets_campaign.experiment
    body = {"term": "VISpubliclore", "definition": "Again."}
    before = LoreEntry.objects.count()
    response = api(owner).post(url(experiment), body, format="json")
    assert response.status_code == 400
    assert "term" in response.json()
    assert LoreEntry.objects.count() == before


def test_the_dm_corrects_confirms_and_locks_recording_who_and_what(api, secrets_campaign, owner):
    experiment = secrets_campaign.experiment
    entry = secrets_campaign.lore["public_lore"]
    revisions = LoreRevision.objects.filter(entry=entry).count()
    body = {"definition": "The archive under Lowmere.", "status": "confirmed", "locked": True}
    response = api(owner).patch(url(experiment, entry.pk), body, format="json")
    assert response.status_code == 200, response.json()
    entry.refresh_from_db()
    assert (entry.definition, entry.status, entry.locked) == (
        "The archive under Lowmere.",
        "confirmed",
        True,
    )
    revision = LoreRevision.objects.filter(entry=entry).latest("id")
    assert LoreRevision.objects.filter(entry=entry).count() == revisions + 1
    assert revision.user == owner
    assert revision.changes["locked"] == [False, True]
    assert response.json()["locked"] is True


def test_invalidating_a_fact_in_story_time(api, secrets_campaign, owner):
    entry = secrets_campaign.lore["public_lore"]
    response = api(owner).patch(
        url(secrets_campaign.experiment, entry.pk), {"invalid_from_round": 3}, format="json"
    )
    assert response.status_code == 200
    entry.refresh_from_db()
    assert entry.invalid_from_round == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": "maybe"}, "status"),
        ({"locked": "sometimes"}, "locked"),
        ({"term": "Renamed"}, "term"),
        ({"audience": None}, "audience"),
        ({"definition": "x" * 5000}, "definition"),
        ({"invalid_from_round": -2}, "invalid_from_round"),
    ],
)
def test_bad_patches_are_400_and_change_nothing(api, secrets_campaign, owner, body, field):
    entry = secrets_campaign.lore["public_lore"]
    response = api(owner).patch(url(secrets_campaign.experiment, entry.pk), body, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    fresh = LoreEntry.objects.get(pk=entry.pk)
    assert (fresh.term, fresh.definition, fresh.status, fresh.locked, fresh.audience) == (
        entry.term,
        entry.definition,
        entry.status,
        entry.locked,
        entry.audience,
    )


def test_a_player_may_read_but_not_edit_or_create_lore(api, secrets_campaign, player):
    experiment = secrets_campaign.experiment
    entry = secrets_campaign.lore["public_lore"]
    response = api(player).patch(url(experiment, entry.pk), {"locked": True}, format="json")
    assert response.status_code == 403
    entry.refresh_from_db()
    assert entry.locked is False
    before = LoreEntry.objects.count()
    created = api(player).post(url(experiment), {"term": "Mine"}, format="json")
    assert created.status_code == 403
    assert LoreEntry.objects.count() == before


def test_outsiders_and_missing_entries_get_404(api, secrets_campaign, owner, stranger):
    experiment = secrets_campaign.experiment
    entry = secrets_campaign.lore["public_lore"]
    assert api(stranger).get(url(experiment)).status_code == 404
    assert api(stranger).get(url(experiment, entry.pk)).status_code == 404
    response = api(stranger).patch(url(experiment, entry.pk), {"locked": True}, format="json")
    assert response.status_code == 404
    assert api(owner).get(url(experiment, 999999)).status_code == 404
    assert api(owner).get(url(experiment, "junk")).status_code == 404
    assert (
        api(owner).patch(url(experiment, 999999), {"locked": True}, format="json").status_code
        == 404
    )


def test_an_entry_of_another_experiment_is_404_under_this_one(api, secrets_campaign, owner):
    from tests.factories import make_experiment

    other = make_experiment(owner=owner)
    entry = secrets_campaign.lore["public_lore"]
    assert api(owner).get(url(other, entry.pk)).status_code == 404
    assert (
        api(owner).patch(url(other, entry.pk), {"locked": True}, format="json").status_code == 404
    )
    entry.refresh_from_db()
    assert entry.locked is False


def test_wrong_methods_are_405(api, secrets_campaign, owner):
    experiment = secrets_campaign.experiment
    entry = secrets_campaign.lore["public_lore"]
    assert api(owner).delete(url(experiment, entry.pk)).status_code == 405
    assert api(owner).put(url(experiment, entry.pk), {}, format="json").status_code == 405
    assert api(owner).patch(url(experiment), {}, format="json").status_code == 405
    assert LoreEntry.objects.filter(pk=entry.pk).exists()
