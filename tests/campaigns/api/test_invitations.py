"""Seats by invitation through the API: the owner offers a seat by username, the invitee
lists, accepts or declines; the owner lists and withdraws."""

from __future__ import annotations

import pytest

from campaigns.models import Invitation, Participant
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def invitations_url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/invitations/"


@pytest.fixture
def newcomer(db):
    return make_user("newcomer")


def invite(api, owner, campaign, role="Thorin", **who):
    who = who or {"username": "newcomer"}
    response = api(owner).post(invitations_url(campaign), {"role": role, **who}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_the_invitee_sees_the_invitation_accepts_and_then_plays_the_seat(
    api, campaign, owner, newcomer
):
    sent = invite(api, owner, campaign)

    listed = api(newcomer).get("/api/invitations/").json()["results"]
    assert [(i["id"], i["campaign"], i["role"], i["invited_by"]) for i in listed] == [
        (sent["id"], campaign.name, "Thorin", "owner")
    ]
    assert api(newcomer).get(f"/api/experiments/{campaign.pk}/").status_code == 404

    answer = api(newcomer).post(f"/api/invitations/{sent['id']}/accept/")

    assert answer.status_code == 200
    assert answer.json() == {
        "id": sent["id"],
        "status": "accepted",
        "role": "Thorin",
        "experiment": campaign.pk,
    }
    assert Participant.objects.get(experiment=campaign, role="Thorin").user == newcomer
    assert api(newcomer).get("/api/invitations/").json()["results"] == []
    assert [e["id"] for e in api(newcomer).get("/api/experiments/").json()["results"]] == [
        campaign.pk
    ]
    # They read as Thorin: they may post as Thorin and open Thorin's pack, not the DM's.
    post = api(newcomer).post(
        f"/api/experiments/{campaign.pk}/turns/",
        {"speaker": "Thorin", "kind": "action", "content": "I board."},
        format="json",
    )
    assert post.status_code == 201, post.json()
    assert api(newcomer).get(f"/api/experiments/{campaign.pk}/context/Thorin/").status_code == 200
    assert api(newcomer).get(f"/api/experiments/{campaign.pk}/context/DM/").status_code == 403
    # The owner's list shows who answered.
    owner_view = api(owner).get(invitations_url(campaign)).json()["results"]
    assert [(i["invitee"], i["status"]) for i in owner_view] == [("newcomer", "accepted")]
    assert owner_view[0]["responded_at"] is not None


def test_a_declined_invitation_seats_nobody(api, campaign, owner, newcomer):
    sent = invite(api, owner, campaign)

    answer = api(newcomer).post(f"/api/invitations/{sent['id']}/decline/")

    assert answer.status_code == 200 and answer.json()["status"] == "declined"
    assert answer.json()["experiment"] is None
    assert Participant.objects.get(experiment=campaign, role="Thorin").user is None
    assert api(newcomer).get(f"/api/experiments/{campaign.pk}/").status_code == 404
    assert api(newcomer).post(f"/api/invitations/{sent['id']}/accept/").status_code == 404


def test_the_owner_withdraws_a_pending_invitation(api, campaign, owner, newcomer):
    sent = invite(api, owner, campaign)

    withdrawn = api(owner).delete(f"{invitations_url(campaign)}{sent['id']}/")

    assert withdrawn.status_code == 204
    assert Invitation.objects.get(pk=sent["id"]).status == "withdrawn"
    assert api(newcomer).get("/api/invitations/").json()["results"] == []
    assert api(newcomer).post(f"/api/invitations/{sent['id']}/accept/").status_code == 404
    again = api(owner).delete(f"{invitations_url(campaign)}{sent['id']}/")
    assert again.status_code == 400 and "invitation" in again.json()


def test_a_new_invitation_to_a_seat_withdraws_the_pending_one(api, campaign, owner, newcomer):
    first = invite(api, owner, campaign)
    other = make_user("latecomer")

    second = invite(api, owner, campaign, username="latecomer")

    statuses = dict(Invitation.objects.values_list("id", "status"))
    assert statuses == {first["id"]: "withdrawn", second["id"]: "pending"}
    assert api(newcomer).post(f"/api/invitations/{first['id']}/accept/").status_code == 404
    assert api(other).post(f"/api/invitations/{second['id']}/accept/").status_code == 200


def test_one_seat_per_person_per_campaign(api, campaign, owner, newcomer):
    thorin = invite(api, owner, campaign, role="Thorin")
    cassia = invite(api, owner, campaign, role="Cassia")
    assert api(newcomer).post(f"/api/invitations/{thorin['id']}/accept/").status_code == 200

    refused = api(newcomer).post(f"/api/invitations/{cassia['id']}/accept/")

    assert refused.status_code == 400 and "invitation" in refused.json()
    assert Participant.objects.get(experiment=campaign, role="Cassia").user is None
    assert Invitation.objects.get(pk=cassia["id"]).status == "pending"


def test_a_seat_taken_meanwhile_cannot_be_accepted(api, campaign, owner, newcomer, player):
    sent = invite(api, owner, campaign, role="Cassia")
    Participant.objects.filter(experiment=campaign, role="Cassia").update(user=player)

    refused = api(newcomer).post(f"/api/invitations/{sent['id']}/accept/")

    assert refused.status_code == 400 and "invitation" in refused.json()
    assert Participant.objects.get(experiment=campaign, role="Cassia").user == player


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"username": "newcomer"}, "role"),
        ({"role": "Nobody", "username": "newcomer"}, "role"),
        ({"role": "Thorin"}, "username"),
        ({"role": "Thorin", "username": ""}, "username"),
        ({"role": "Thorin", "username": 7}, "username"),
        ({"role": "Thorin", "username": "newcomer", "user": 3}, "username"),
        ({"role": "Thorin", "user": "3"}, "user"),
        ({"role": "Thorin", "user": 0}, "user"),
        ({"role": "Thorin", "username": "newcomer", "colour": "red"}, "colour"),
    ],
)
def test_bad_invitations_are_400_naming_the_field_and_store_nothing(
    api, campaign, owner, newcomer, body, field
):
    response = api(owner).post(invitations_url(campaign), body, format="json")

    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert not Invitation.objects.exists()


def test_a_seat_someone_plays_cannot_be_offered(api, campaign, owner, player):
    response = api(owner).post(
        invitations_url(campaign), {"role": "Thorin", "username": "newcomer"}, format="json"
    )

    assert response.status_code == 400 and "role" in response.json()
    assert not Invitation.objects.exists()


def test_only_the_owner_and_staff_invite_and_list(
    api, campaign, owner, staff_user, player, stranger, newcomer
):
    body = {"role": "Cassia", "username": "newcomer"}
    assert api(player).post(invitations_url(campaign), body, format="json").status_code == 403
    assert api(player).get(invitations_url(campaign)).status_code == 403
    assert api(stranger).post(invitations_url(campaign), body, format="json").status_code == 404
    assert api(stranger).get(invitations_url(campaign)).status_code == 404
    assert api(None).get(invitations_url(campaign)).status_code == 401
    assert not Invitation.objects.exists()
    assert api(staff_user).post(invitations_url(campaign), body, format="json").status_code == 201
    assert api(owner).get(invitations_url(campaign)).json()["count"] == 1


def test_answers_take_no_body_and_junk_ids_are_404(api, campaign, owner, newcomer):
    sent = invite(api, owner, campaign)

    junk = api(newcomer).post(
        f"/api/invitations/{sent['id']}/accept/", {"role": "DM"}, format="json"
    )
    assert junk.status_code == 400 and "role" in junk.json()
    for bad in ("abc", "0", str(2**70)):
        assert api(newcomer).post(f"/api/invitations/{bad}/accept/").status_code == 404
    assert api(newcomer).get(f"/api/invitations/{sent['id']}/accept/").status_code == 405
    assert Participant.objects.get(experiment=campaign, role="Thorin").user is None
