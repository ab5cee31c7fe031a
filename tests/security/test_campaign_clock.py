"""Finding 1: a player moved the campaign clock (and so revealed every secret goal) by
posting into a far-future round. The clock now belongs to the DM side."""

from __future__ import annotations

import pytest
from django.conf import settings

from campaigns.models import Experiment, Turn
from campaigns.services import relay
from campaigns.services.context import pack_for_role
from campaigns.services.turns import turn_create

pytestmark = pytest.mark.django_db


def turns_url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/turns/"


def participants_seen_by(api, user, experiment) -> dict[str, str]:
    response = api(user).get(f"/api/experiments/{experiment.pk}/participants/")
    assert response.status_code == 200
    return {p["role"]: p.get("secret") for p in response.json()["results"]}


ATTACK = {"speaker": "Thorin", "kind": "action", "content": "x"}


@pytest.mark.parametrize("round_", [2**31 - 1, settings.BABEL_MAX_ROUND, 6, 2, 0])
def test_a_player_cannot_post_outside_the_open_round(api, reveal_campaign, player, round_):
    before = participants_seen_by(api, player, reveal_campaign)

    response = api(player).post(
        turns_url(reveal_campaign), {**ATTACK, "round": round_}, format="json"
    )

    assert response.status_code == 400
    assert "round" in response.json()
    assert not Turn.objects.exists()
    reveal_campaign.refresh_from_db()
    assert reveal_campaign.current_round == 1
    # Nothing another role keeps secret became readable to the attacker.
    assert participants_seen_by(api, player, reveal_campaign) == before
    assert before["Cassia"] is None
    pack = pack_for_role(experiment=reveal_campaign, role="Thorin")
    assert "SECRET-cassia" not in "".join(section.text for section in pack.sections)


def test_a_player_posts_into_the_open_round_with_or_without_naming_it(api, reveal_campaign, player):
    named = api(player).post(turns_url(reveal_campaign), {**ATTACK, "round": 1}, format="json")
    omitted = api(player).post(turns_url(reveal_campaign), ATTACK, format="json")

    assert named.status_code == 201, named.json()
    assert omitted.status_code == 201, omitted.json()
    assert named.json()["round"] == omitted.json()["round"] == 1
    reveal_campaign.refresh_from_db()
    assert reveal_campaign.current_round == 1


def test_rounds_past_the_bound_are_refused_for_the_owner_too(api, reveal_campaign, owner):
    body = {"speaker": "DM", "kind": "narrative", "content": "Far future."}

    too_far = api(owner).post(
        turns_url(reveal_campaign), {**body, "round": settings.BABEL_MAX_ROUND + 1}, format="json"
    )
    huge = api(owner).post(turns_url(reveal_campaign), {**body, "round": 2**31 - 1}, format="json")

    assert too_far.status_code == huge.status_code == 400
    assert "round" in too_far.json() and "round" in huge.json()
    assert str(settings.BABEL_MAX_ROUND) in too_far.json()["round"][0]
    assert not Turn.objects.exists()


def test_the_dm_side_opens_rounds_and_reveals_follow_the_clock(api, reveal_campaign, owner, player):
    body = {"speaker": "DM", "kind": "narrative", "content": "Round six begins."}
    assert participants_seen_by(api, player, reveal_campaign)["Cassia"] is None

    response = api(owner).post(turns_url(reveal_campaign), {**body, "round": 6}, format="json")

    assert response.status_code == 201
    reveal_campaign.refresh_from_db()
    assert reveal_campaign.current_round == 6
    # Past Cassia's reveal round (5), not yet past the DM's (8).
    seen = participants_seen_by(api, player, reveal_campaign)
    assert seen["Cassia"] == "SECRET-cassia-poisoned-vane"
    assert seen["DM"] is None


def test_reveals_read_the_clock_not_the_highest_stored_round(reveal_campaign):
    """Even a turn stored in a later round (a DM fixing the log, an old import) does not
    move "now": only the clock does."""
    Turn.objects.create(
        experiment=reveal_campaign, round=40, seq=1, speaker="DM", kind="narrative", content="x"
    )

    pack = pack_for_role(experiment=reveal_campaign, role="Thorin")

    assert "SECRET-cassia" not in "".join(section.text for section in pack.sections)


def test_an_import_sets_the_clock_to_the_last_round(api, owner):
    transcript = {
        "experiment": {"name": "Imported"},
        "participants": [{"role": "DM", "kind": "dm"}, {"role": "Thorin"}],
        "turns": [
            {"round": 0, "speaker": "DM", "kind": "narrative", "content": "Setup."},
            {"round": 7, "speaker": "Thorin", "kind": "action", "content": "Late."},
        ],
    }

    response = api(owner).post("/api/import/", transcript, format="json")

    assert response.status_code == 201, response.json()
    assert Experiment.objects.get(pk=response.json()["id"]).current_round == 7


def test_a_round_start_opens_the_next_round(reveal_campaign, django_capture_on_commit_callbacks):
    reveal_campaign.participants.filter(role="DM").update(model="offline")

    with django_capture_on_commit_callbacks(execute=True):
        job = relay.round_start(experiment=reveal_campaign)
    job.refresh_from_db()

    reveal_campaign.refresh_from_db()
    assert job.result["round"] == 2
    assert reveal_campaign.current_round == 2
    assert set(Turn.objects.values_list("round", flat=True)) == {2}


def test_the_relay_cannot_run_past_the_last_round(reveal_campaign):
    Experiment.objects.filter(pk=reveal_campaign.pk).update(current_round=settings.BABEL_MAX_ROUND)
    reveal_campaign.refresh_from_db()
    reveal_campaign.participants.filter(role="DM").update(model="offline")

    with pytest.raises(Exception) as caught:
        relay.round_start(experiment=reveal_campaign)

    assert "round" in caught.value.message_dict
    assert not Turn.objects.exists()


def test_the_service_keeps_players_in_the_open_round_even_without_the_api(reveal_campaign):
    with pytest.raises(Exception) as caught:
        turn_create(
            experiment=reveal_campaign,
            round=9,
            speaker="Thorin",
            kind="action",
            content="x",
            open_round_only=True,
        )
    assert "round" in caught.value.message_dict
    reveal_campaign.refresh_from_db()
    assert reveal_campaign.current_round == 1
