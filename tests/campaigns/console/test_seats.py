"""`/campaigns/<id>/seats/` and the dashboard's invitations: the owner offers a seat by
username in the console, the invitee accepts or declines on their dashboard."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.models import Invitation, Participant
from tests.campaigns.console.conftest import HX, PERSONAS, is_fragment, is_login_redirect
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def seats_url(exp) -> str:
    return reverse("console:seats", args=[exp.pk])


@pytest.fixture
def newcomer(db):
    return make_user("newcomer")


@pytest.fixture
def open_seat(exp):
    """A seat nobody plays yet (the conftest's Thorin and Cassia are taken)."""
    from campaigns.services.experiments import participant_create

    return participant_create(experiment=exp, role="Wren", kind="player")


def invite(as_user, owner, exp, username="newcomer", role="Wren"):
    return as_user(owner).post(seats_url(exp), {"role": role, "username": username})


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_seats_page_is_the_owners_and_staffs(as_user, personas, exp, open_seat, persona):
    response = as_user(personas[persona]).get(seats_url(exp))

    if persona in ("owner", "staff"):
        assert response.status_code == 200
        body = response.content.decode()
        assert "Invite a player" in body and "Wren" in body and "thorin_player" in body
    elif persona == "anonymous":
        assert is_login_redirect(response)
    else:
        assert response.status_code == {"player": 403, "stranger": 404}[persona]


def test_the_seats_tab_shows_for_editors_only(as_user, owner, player, exp):
    page = reverse("console:campaign", args=[exp.pk])
    assert f'href="{seats_url(exp)}"' in as_user(owner).get(page).content.decode()
    assert f'href="{seats_url(exp)}"' not in as_user(player).get(page).content.decode()


def test_the_owner_invites_and_the_invitee_accepts_on_the_dashboard(
    as_user, owner, exp, open_seat, newcomer
):
    response = invite(as_user, owner, exp)
    assert response.status_code == 302
    invitation = Invitation.objects.get()
    assert (invitation.participant, invitation.user, invitation.status) == (
        open_seat,
        newcomer,
        "pending",
    )
    seats_page = as_user(owner).get(seats_url(exp)).content.decode()
    assert "invited: newcomer (pending)" in seats_page

    invitee = as_user(newcomer)
    dashboard = invitee.get("/").content.decode()
    assert "invites you to play <strong>Wren</strong>" in dashboard
    assert exp.name in dashboard
    assert reverse("console:campaign", args=[exp.pk]) not in dashboard  # no campaign row
    assert invitee.get(reverse("console:campaign", args=[exp.pk])).status_code == 404

    accepted = invitee.post(reverse("console:invitation_accept", args=[invitation.pk]))

    assert accepted.status_code == 302
    assert accepted["Location"] == reverse("console:campaign", args=[exp.pk])
    assert Participant.objects.get(pk=open_seat.pk).user == newcomer
    page = invitee.get(reverse("console:campaign", args=[exp.pk]))
    assert page.status_code == 200 and "you play <strong>Wren</strong>" in page.content.decode()
    dashboard = invitee.get("/").content.decode()
    assert "invites you" not in dashboard and "playing Wren" in dashboard
    assert "newcomer" in as_user(owner).get(seats_url(exp)).content.decode()


def test_the_invitee_declines_and_sees_nothing_of_the_campaign(
    as_user, owner, exp, open_seat, newcomer
):
    invite(as_user, owner, exp)
    invitation = Invitation.objects.get()
    invitee = as_user(newcomer)

    declined = invitee.post(reverse("console:invitation_decline", args=[invitation.pk]))

    assert declined.status_code == 302 and declined["Location"] == reverse("console:dashboard")
    assert Invitation.objects.get().status == "declined"
    assert Participant.objects.get(pk=open_seat.pk).user is None
    dashboard = invitee.get("/").content.decode()
    assert exp.name not in dashboard
    assert invitee.get(reverse("console:campaign", args=[exp.pk])).status_code == 404
    assert "Declined" in as_user(owner).get(seats_url(exp)).content.decode()


def test_nobody_else_answers_an_invitation(
    as_user, owner, player, stranger, exp, open_seat, newcomer
):
    invite(as_user, owner, exp)
    invitation = Invitation.objects.get()

    for user in (owner, player, stranger):
        for name in ("console:invitation_accept", "console:invitation_decline"):
            response = as_user(user).post(reverse(name, args=[invitation.pk]))
            assert response.status_code == 404
    assert (
        as_user(newcomer)
        .get(reverse("console:invitation_accept", args=[invitation.pk]))
        .status_code
        == 405
    )
    assert Invitation.objects.get().status == "pending"
    assert Participant.objects.get(pk=open_seat.pk).user is None


def test_an_unknown_username_reads_like_any_other(as_user, owner, exp, open_seat, newcomer):
    known = invite(as_user, owner, exp, username="newcomer")
    unknown = invite(as_user, owner, exp, username="no-such-user", role="Wren")

    assert known.status_code == unknown.status_code == 302
    page = as_user(owner).get(seats_url(exp)).content.decode()
    assert "invited: no-such-user (pending)" in page
    # The first offer of the seat was withdrawn by the second: both read "Withdrawn" /
    # "Pending" by what the owner did, never by whether the name exists.
    assert dict(Invitation.objects.values_list("invitee", "status")) == {
        "newcomer": "withdrawn",
        "no-such-user": "pending",
    }


def test_the_invite_form_answers_htmx_with_the_fragment(as_user, owner, exp, open_seat, newcomer):
    response = as_user(owner).post(seats_url(exp), {"role": "Wren", "username": "newcomer"}, **HX)

    assert response.status_code == 200 and is_fragment(response)
    assert 'id="seats"' in response.content.decode()
    assert Invitation.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "Wren", "username": ""}, "username"),
        ({"role": "Thorin", "username": "newcomer"}, "role"),  # taken: not offered
        ({"role": "Nobody", "username": "newcomer"}, "role"),
        ({"username": "newcomer"}, "role"),
    ],
)
def test_a_bad_invitation_re_renders_with_the_fields_error_and_stores_nothing(
    as_user, owner, exp, open_seat, newcomer, body, field
):
    response = as_user(owner).post(seats_url(exp), body, **HX)

    assert response.status_code == 422 and is_fragment(response)
    assert field in response.context["form"].errors
    assert not Invitation.objects.exists()


def test_players_and_strangers_cannot_invite(as_user, player, stranger, exp, open_seat, newcomer):
    assert invite(as_user, player, exp).status_code == 403
    assert invite(as_user, stranger, exp).status_code == 404
    assert not Invitation.objects.exists()


def test_the_owner_withdraws_a_pending_invitation(as_user, owner, exp, open_seat, newcomer):
    invite(as_user, owner, exp)
    invitation = Invitation.objects.get()
    url = reverse("console:invitation_withdraw", args=[exp.pk, invitation.pk])

    response = as_user(owner).post(url, **HX)

    assert response.status_code == 200 and is_fragment(response)
    assert Invitation.objects.get().status == "withdrawn"
    assert "invites you" not in as_user(newcomer).get("/").content.decode()
    refused = as_user(newcomer).post(reverse("console:invitation_accept", args=[invitation.pk]))
    assert refused.status_code == 404


def test_existing_seats_stay_seated(as_user, player, exp):
    """Seats linked before invitations existed (fixtures, the demo) need no invitation."""
    assert Participant.objects.get(experiment=exp, role="Thorin").user == player
    assert as_user(player).get(reverse("console:campaign", args=[exp.pk])).status_code == 200
    assert not Invitation.objects.exists()
