"""Finding 6 of issue 23, seats: any user could seat any other user in their own campaign
(it appeared on the victim's dashboard, and the victim's API and packs carried it), and
the error for an unknown user id told existing ids apart. The attacker here is a
signed-in user with a campaign of their own (so they are its owner), and their victim is
another user."""

from __future__ import annotations

import pytest
from django.test import Client

from campaigns.models import Participant
from tests.factories import make_experiment, make_turn, make_user

pytestmark = pytest.mark.django_db

LURE = "ZQX-lure-campaign"
LURE_TEXT = "ZQX-lure-narrative-click-here"


@pytest.fixture
def attacker(db):
    return make_user("mallory")


@pytest.fixture
def victim(db):
    return make_user("victim")


@pytest.fixture
def lure(attacker):
    experiment = make_experiment(owner=attacker, name=LURE)
    make_turn(experiment, content=LURE_TEXT)
    return experiment


def what_the_victim_reads(api, victim, lure) -> dict:
    """Every place a campaign reaches a user: the dashboard, the campaign list, the
    campaign's pages and API reads, and a pack of the seat."""
    console = Client()
    console.force_login(victim)
    reads = {
        "dashboard": console.get("/").content.decode(),
        "api list": api(victim).get("/api/experiments/").content.decode(),
        "api detail": api(victim).get(f"/api/experiments/{lure.pk}/").status_code,
        "api turns": api(victim).get(f"/api/experiments/{lure.pk}/turns/").status_code,
        "api pack": api(victim).get(f"/api/experiments/{lure.pk}/context/Thorin/").status_code,
        "page": console.get(f"/campaigns/{lure.pk}/").status_code,
        "notes page": console.get(f"/campaigns/{lure.pk}/notes/").status_code,
        "inspector": console.get(f"/campaigns/{lure.pk}/context/Thorin/").status_code,
    }
    reads["dashboard links it"] = f'href="/campaigns/{lure.pk}/' in reads["dashboard"]
    return reads


def outside_invitations(dashboard: str) -> str:
    """The dashboard without its invitations panel: an invitation names the campaign, the
    seat and who offered it (what the invitee decides on), and nothing else of it."""
    start = dashboard.find('<section class="panel invitations"')
    if start == -1:
        return dashboard
    return dashboard[:start] + dashboard[dashboard.index("</section>", start) :]


def assert_nothing_reaches(reads: dict) -> None:
    assert LURE_TEXT not in reads["dashboard"]
    assert LURE not in outside_invitations(reads["dashboard"])
    assert LURE not in reads["api list"]
    assert not reads["dashboard links it"]
    for key in ("api detail", "api turns", "api pack", "page", "notes page", "inspector"):
        assert reads[key] == 404, (key, reads[key])


def test_adding_another_user_as_a_participant_does_not_seat_them(api, attacker, victim, lure):
    response = api(attacker).post(
        f"/api/experiments/{lure.pk}/participants/",
        {"role": "Bait", "user": victim.pk},
        format="json",
    )

    assert response.status_code == 201
    assert response.json()["user"] is None
    assert response.json()["invitation"]["status"] == "pending"
    assert Participant.objects.get(experiment=lure, role="Bait").user is None
    assert_nothing_reaches(what_the_victim_reads(api, victim, lure))


def test_inviting_another_user_to_a_seat_does_not_seat_them(api, attacker, victim, lure):
    response = api(attacker).post(
        f"/api/experiments/{lure.pk}/invitations/",
        {"role": "Thorin", "username": "victim"},
        format="json",
    )

    assert response.status_code == 201
    assert Participant.objects.get(experiment=lure, role="Thorin").user is None
    assert_nothing_reaches(what_the_victim_reads(api, victim, lure))


def _answers(api, attacker, lure, role, **who):
    """What the inviter gets back, with the fields that differ on every call removed."""
    response = api(attacker).post(
        f"/api/experiments/{lure.pk}/participants/", {"role": role, **who}, format="json"
    )
    body = response.json()
    invitation = dict(body.pop("invitation") or {})
    for noisy in ("id", "created_at"):
        body.pop(noisy, None)
        invitation.pop(noisy, None)
    invitation.pop("invitee", None)  # echoes what was sent
    return response.status_code, body, invitation


def test_an_unknown_and_a_known_user_id_get_the_same_answer(api, attacker, victim, lure):
    unknown_id = victim.pk + 1000

    known = _answers(api, attacker, lure, "Seat", user=victim.pk)
    unknown = _answers(api, attacker, lure, "Seat2", user=unknown_id)

    status_known, body_known, invitation_known = known
    status_unknown, body_unknown, invitation_unknown = unknown
    assert status_known == status_unknown == 201
    body_known.pop("role"), body_unknown.pop("role")
    body_known.pop("order"), body_unknown.pop("order")
    assert body_known == body_unknown
    assert invitation_known == {**invitation_unknown, "role": "Seat"}
    # The owner's list of invitations tells them apart no better.
    listed = api(attacker).get(f"/api/experiments/{lure.pk}/invitations/").json()["results"]
    assert {(i["invitee"], i["status"]) for i in listed} == {
        (f"#{victim.pk}", "pending"),
        (f"#{unknown_id}", "pending"),
    }
    assert all(
        set(i) == {"id", "role", "invitee", "status", "created_at", "responded_at"} for i in listed
    )


@pytest.mark.parametrize("username", ["victim", "no-such-user"])
def test_an_unknown_and_a_known_username_get_the_same_answer(api, attacker, victim, lure, username):
    response = api(attacker).post(
        f"/api/experiments/{lure.pk}/invitations/",
        {"role": "Thorin", "username": username},
        format="json",
    )

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "role", "invitee", "status", "created_at", "responded_at"}
    assert (body["role"], body["invitee"], body["status"], body["responded_at"]) == (
        "Thorin",
        username,
        "pending",
        None,
    )


def test_nobody_but_the_invitee_can_answer_an_invitation(api, attacker, victim, lure, stranger):
    invitation_id = (
        api(attacker)
        .post(
            f"/api/experiments/{lure.pk}/invitations/",
            {"role": "Thorin", "username": "victim"},
            format="json",
        )
        .json()["id"]
    )

    # The inviter accepting on the victim's behalf, or a stranger guessing the id.
    for user in (attacker, stranger):
        response = api(user).post(f"/api/invitations/{invitation_id}/accept/", {}, format="json")
        assert response.status_code == 404
    assert Participant.objects.get(experiment=lure, role="Thorin").user is None
    listed = api(attacker).get(f"/api/experiments/{lure.pk}/invitations/").json()["results"]
    assert [(i["id"], i["status"]) for i in listed] == [(invitation_id, "pending")]
    assert_nothing_reaches(what_the_victim_reads(api, victim, lure))


def test_a_declined_invitation_leaves_the_victim_out(api, attacker, victim, lure):
    invitation_id = (
        api(attacker)
        .post(
            f"/api/experiments/{lure.pk}/invitations/",
            {"role": "Thorin", "username": "victim"},
            format="json",
        )
        .json()["id"]
    )

    declined = api(victim).post(f"/api/invitations/{invitation_id}/decline/", {}, format="json")
    again = api(victim).post(f"/api/invitations/{invitation_id}/accept/", {}, format="json")

    assert declined.status_code == 200 and declined.json()["status"] == "declined"
    assert again.status_code == 404
    assert_nothing_reaches(what_the_victim_reads(api, victim, lure))
