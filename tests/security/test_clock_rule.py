"""Finding 2 of issue 23: a user seated as the DM (not the owner, not staff) moved the
campaign clock through the GM-notes form — ``round=9`` was accepted, so a secret goal due
after round 5 became readable by players — and ``round=0`` back-dated a note, while the
API and the composer refused the same user. One rule now holds on every write path: a
person writes into the open round only, unless they are the owner or staff."""

from __future__ import annotations

import pytest
from django.test import Client

from campaigns.models import Experiment, Turn
from tests.factories import make_user

pytestmark = pytest.mark.django_db

NOTE = "Co-DM note: the bell tolls."


@pytest.fixture
def co_dm(reveal_campaign):
    """A user seated as the DM of the campaign: not its owner, not staff."""
    user = make_user("co_dm")
    reveal_campaign.participants.filter(role="DM").update(user=user)
    return user


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def secrets_seen_by(api, user, experiment) -> dict[str, str | None]:
    response = api(user).get(f"/api/experiments/{experiment.pk}/participants/")
    assert response.status_code == 200
    return {p["role"]: p["secret"] for p in response.json()["results"]}


def _notes_form(user, experiment, round_):
    return browser(user).post(
        f"/campaigns/{experiment.pk}/notes/", {"content": NOTE, "round": round_}
    )


def _composer(user, experiment, round_):
    return browser(user).post(
        f"/campaigns/{experiment.pk}/turns/",
        {"kind": "gm_note", "content": NOTE, "round": round_},
    )


def _api(user, experiment, round_, api):
    body = {"speaker": "DM", "kind": "gm_note", "content": NOTE}
    if round_ != "":
        body["round"] = round_
    return api(user).post(f"/api/experiments/{experiment.pk}/turns/", body, format="json")


def _round_error(response) -> str:
    """The message the response gives for the ``round`` field (API: JSON; console: the
    re-rendered form's field error)."""
    if response["Content-Type"].startswith("application/json"):
        return " ".join(response.json().get("round", []))
    form = response.context["form"]
    return " ".join(form.errors.get("round", []))


@pytest.mark.parametrize("path", ["notes form", "composer", "api"])
@pytest.mark.parametrize("round_", [9, 6, 2, 0])
def test_a_user_seated_as_the_dm_cannot_write_outside_the_open_round(
    api, reveal_campaign, co_dm, player, path, round_
):
    before = secrets_seen_by(api, player, reveal_campaign)
    send = {"notes form": _notes_form, "composer": _composer}.get(path)

    response = (
        send(co_dm, reveal_campaign, round_) if send else _api(co_dm, reveal_campaign, round_, api)
    )

    assert 400 <= response.status_code < 500
    assert "Round 1 is open" in _round_error(response)
    assert not Turn.objects.filter(experiment=reveal_campaign).exists()
    assert Experiment.objects.get(pk=reveal_campaign.pk).current_round == 1
    # Cassia's goal (revealed after round 5) is still hers: the player reads nothing new.
    after = secrets_seen_by(api, player, reveal_campaign)
    assert after == before
    assert after["Cassia"] is None


@pytest.mark.parametrize("path", ["notes form", "composer", "api"])
def test_a_user_seated_as_the_dm_writes_into_the_open_round(
    api, reveal_campaign, co_dm, player, path
):
    send = {"notes form": _notes_form, "composer": _composer}.get(path)

    named = send(co_dm, reveal_campaign, 1) if send else _api(co_dm, reveal_campaign, 1, api)
    omitted = send(co_dm, reveal_campaign, "") if send else _api(co_dm, reveal_campaign, "", api)

    assert named.status_code in (201, 302), named.content[:300]
    assert omitted.status_code in (201, 302), omitted.content[:300]
    notes = Turn.objects.filter(experiment=reveal_campaign, kind="gm_note")
    assert list(notes.values_list("round", flat=True)) == [1, 1]
    assert Experiment.objects.get(pk=reveal_campaign.pk).current_round == 1
    assert secrets_seen_by(api, player, reveal_campaign)["Cassia"] is None


def test_the_co_dm_notes_form_hides_the_round_it_may_not_choose(reveal_campaign, co_dm, owner):
    co_dm_page = browser(co_dm).get(f"/campaigns/{reveal_campaign.pk}/notes/")
    owner_page = browser(owner).get(f"/campaigns/{reveal_campaign.pk}/notes/")

    assert co_dm_page.status_code == owner_page.status_code == 200
    assert 'type="hidden" name="round"' in co_dm_page.content.decode()
    assert 'type="number" name="round" value="1"' in owner_page.content.decode()


def test_a_whisper_form_post_with_a_forged_round_lands_in_the_open_round(
    api, reveal_campaign, co_dm, player
):
    response = browser(co_dm).post(
        f"/campaigns/{reveal_campaign.pk}/whispers/post/",
        {"recipients": ["Thorin"], "content": "Psst.", "speaker": "DM", "round": 9},
    )

    assert response.status_code == 302
    whisper = Turn.objects.get(experiment=reveal_campaign, kind="whisper")
    assert whisper.round == 1
    assert Experiment.objects.get(pk=reveal_campaign.pk).current_round == 1
    assert secrets_seen_by(api, player, reveal_campaign)["Cassia"] is None


def test_a_co_dm_import_is_a_campaign_of_their_own_and_leaves_this_clock_alone(
    api, reveal_campaign, co_dm
):
    transcript = {
        "experiment": {"name": "Co-DM's copy"},
        "participants": [{"role": "DM", "kind": "dm"}, {"role": "Thorin"}],
        "turns": [{"round": 9, "speaker": "DM", "kind": "gm_note", "content": NOTE}],
    }

    response = api(co_dm).post("/api/import/", transcript, format="json")

    assert response.status_code == 201, response.json()
    imported = Experiment.objects.get(pk=response.json()["id"])
    assert imported.owner == co_dm and imported.current_round == 9
    assert Experiment.objects.get(pk=reveal_campaign.pk).current_round == 1
    assert not Turn.objects.filter(experiment=reveal_campaign).exists()


@pytest.mark.parametrize("path", ["notes form", "composer", "api"])
def test_the_owner_still_opens_a_later_round_and_reveals_follow(
    api, reveal_campaign, owner, player, path
):
    send = {"notes form": _notes_form, "composer": _composer}.get(path)

    response = send(owner, reveal_campaign, 6) if send else _api(owner, reveal_campaign, 6, api)

    assert response.status_code in (201, 302)
    assert Experiment.objects.get(pk=reveal_campaign.pk).current_round == 6
    assert secrets_seen_by(api, player, reveal_campaign)["Cassia"] == "SECRET-cassia-poisoned-vane"
