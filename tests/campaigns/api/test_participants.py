"""`/api/experiments/{id}/participants/`: roles, and secrets only for those entitled."""

from __future__ import annotations

import pytest

from campaigns.models import Participant
from tests.factories import make_turn, make_user

pytestmark = pytest.mark.django_db


def url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/participants/"


def _by_role(response) -> dict:
    assert response.status_code == 200, response.json()
    return {item["role"]: item for item in response.json()["results"]}


@pytest.fixture
def secret_campaign(campaign):
    campaign.participants.filter(role="Cassia").update(
        secret="Cassia serves the Quiet Ledger.", identity="You play Cassia."
    )
    campaign.participants.filter(role="Thorin").update(secret="Thorin owes the harbour.")
    return campaign


def test_the_owner_reads_every_secret(api, secret_campaign, owner):
    roles = _by_role(api(owner).get(url(secret_campaign)))
    assert list(roles) == ["DM", "Thorin", "Cassia"]  # turn order
    assert roles["Cassia"]["secret"] == "Cassia serves the Quiet Ledger."
    assert roles["Cassia"]["identity"] == "You play Cassia."
    assert roles["Thorin"]["secret"] == "Thorin owes the harbour."


def test_a_player_reads_only_their_own_secret_and_identity(api, secret_campaign, player):
    roles = _by_role(api(player).get(url(secret_campaign)))
    assert roles["Thorin"]["secret"] == "Thorin owes the harbour."
    assert roles["Cassia"]["secret"] is None
    assert roles["Cassia"]["identity"] is None
    assert roles["Cassia"]["bio"] == "Cassia's bio."  # bios are public


def test_as_cannot_widen_a_players_view_of_secrets(api, secret_campaign, player):
    roles = _by_role(api(player).get(url(secret_campaign), {"as": "Cassia"}))
    assert roles["Cassia"]["secret"] is None


def test_the_owner_viewing_as_a_player_sees_that_players_secrets(api, secret_campaign, owner):
    roles = _by_role(api(owner).get(url(secret_campaign), {"as": "Thorin"}))
    assert roles["Thorin"]["secret"] == "Thorin owes the harbour."
    assert roles["Cassia"]["secret"] is None


def test_a_secret_becomes_public_after_its_reveal_round(api, secret_campaign, player):
    secret_campaign.participants.filter(role="Cassia").update(reveal_round=1)
    assert _by_role(api(player).get(url(secret_campaign)))["Cassia"]["secret"] is None
    make_turn(secret_campaign, round=2)
    roles = _by_role(api(player).get(url(secret_campaign)))
    assert roles["Cassia"]["secret"] == "Cassia serves the Quiet Ledger."
    assert roles["Cassia"]["identity"] is None  # a reveal shows the goal, not the prompt


def test_unknown_as_role_is_a_400_naming_as(api, campaign, owner):
    response = api(owner).get(url(campaign), {"as": "Nobody"})
    assert response.status_code == 400
    assert "as" in response.json()


def test_create_a_participant_offered_to_a_user_who_accepts(api, campaign, owner):
    linked = make_user("newcomer")
    body = {
        "role": "Brannoc",
        "kind": "player",
        "model": "offline",
        "bio": "A ferryman.",
        "identity": "You play Brannoc.",
        "secret": "He sank the ferry.",
        "reveal_round": 5,
        "user": linked.pk,
    }
    response = api(owner).post(url(campaign), body, format="json")
    assert response.status_code == 201, response.json()
    stored = Participant.objects.get(experiment=campaign, role="Brannoc")
    assert (stored.kind, stored.model, stored.secret, stored.reveal_round, stored.user) == (
        "player",
        "offline",
        "He sank the ferry.",
        5,
        None,
    )
    assert stored.order == 3
    assert response.json()["secret"] == "He sank the ferry."
    invitation = response.json()["invitation"]
    assert (invitation["role"], invitation["invitee"], invitation["status"]) == (
        "Brannoc",
        f"#{linked.pk}",
        "pending",
    )
    # Not seated until they accept; then they see the experiment, as Brannoc.
    assert api(linked).get(f"/api/experiments/{campaign.pk}/").status_code == 404
    accepted = api(linked).post(f"/api/invitations/{invitation['id']}/accept/")
    assert accepted.status_code == 200, accepted.json()
    assert api(linked).get(f"/api/experiments/{campaign.pk}/").status_code == 200
    assert Participant.objects.get(pk=stored.pk).user == linked


def test_a_participant_without_user_has_no_invitation(api, campaign, owner):
    response = api(owner).post(url(campaign), {"role": "Brannoc"}, format="json")
    assert response.status_code == 201
    assert response.json()["invitation"] is None and response.json()["user"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "Thorin"}, "role"),  # duplicate
        ({}, "role"),
        ({"role": ""}, "role"),
        ({"role": "!bad"}, "role"),
        ({"role": "X", "kind": "wizard"}, "kind"),
        ({"role": "X", "reveal_round": -1}, "reveal_round"),
        ({"role": "X", "user": 0}, "user"),
        ({"role": "X", "user": "7"}, "user"),
        ({"role": "X", "colour": "red"}, "colour"),
    ],
)
def test_create_rejects_bad_participants_and_stores_nothing(api, campaign, owner, body, field):
    before = Participant.objects.count()
    response = api(owner).post(url(campaign), body, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert Participant.objects.count() == before


def test_a_player_may_not_add_participants(api, campaign, player):
    response = api(player).post(url(campaign), {"role": "Ghost"}, format="json")
    assert response.status_code == 403
    assert not Participant.objects.filter(role="Ghost").exists()


def test_outsiders_get_404_and_missing_experiments_404(api, campaign, stranger, owner):
    assert api(stranger).get(url(campaign)).status_code == 404
    response = api(stranger).post(url(campaign), {"role": "Ghost"}, format="json")
    assert response.status_code == 404
    assert not Participant.objects.filter(role="Ghost").exists()
    assert api(owner).get("/api/experiments/424242/participants/").status_code == 404


def test_wrong_method_is_405(api, campaign, owner):
    assert api(owner).delete(url(campaign)).status_code == 405
    assert campaign.participants.count() == 3
