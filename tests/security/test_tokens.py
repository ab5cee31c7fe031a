"""Finding 6 of issue 23, tokens: an API token survived logout and a password change, and
the token endpoint handed back the same one. The attacker here holds a copy of the
victim's token (a leaked script, a shared machine) and keeps trying it after each of the
victim's ways to shut it out."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

TOKEN_URL = "/api/auth/token/"


def sign_in(username: str, password: str) -> str:
    response = APIClient().post(
        TOKEN_URL, {"username": username, "password": password}, format="json"
    )
    assert response.status_code == 200, response.json()
    return response.json()["token"]


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def reads(key: str, campaign) -> int:
    """What the holder of ``key`` gets for the victim's campaign."""
    return with_token(key).get(f"/api/experiments/{campaign.pk}/").status_code


@pytest.fixture
def stolen(owner, campaign):
    key = sign_in("owner", "pw-owner")
    assert reads(key, campaign) == 200
    return key


def test_signing_out_of_the_console_revokes_the_token(owner, campaign, stolen):
    console = Client()
    console.force_login(owner)

    assert console.post("/accounts/logout/").status_code == 302

    assert reads(stolen, campaign) == 401
    fresh = sign_in("owner", "pw-owner")
    assert fresh != stolen
    assert reads(fresh, campaign) == 200


def test_a_password_change_in_the_console_revokes_the_token(owner, campaign, stolen):
    console = Client()
    console.force_login(owner)

    response = console.post(
        "/accounts/password_change/",
        {
            "old_password": "pw-owner",
            "new_password1": "a-new-long-passphrase",
            "new_password2": "a-new-long-passphrase",
        },
    )

    assert response.status_code == 302, response.content[:500]
    assert reads(stolen, campaign) == 401
    fresh = sign_in("owner", "a-new-long-passphrase")
    assert fresh != stolen and reads(fresh, campaign) == 200


def test_a_password_set_anywhere_else_revokes_the_token_too(owner, campaign, stolen, monkeypatch):
    monkeypatch.setattr("getpass.getpass", lambda *a, **k: "another-long-passphrase")
    call_command("changepassword", "owner", stdout=None)

    assert reads(stolen, campaign) == 401
    assert not Token.objects.filter(user=owner).exists()


def test_delete_revokes_the_token_and_the_next_sign_in_gets_a_new_one(owner, campaign, stolen):
    response = with_token(stolen).delete(TOKEN_URL)

    assert response.status_code == 204
    assert reads(stolen, campaign) == 401
    assert not Token.objects.filter(user=owner).exists()
    fresh = sign_in("owner", "pw-owner")
    assert fresh != stolen and reads(fresh, campaign) == 200
    # Revoking again (nothing left to revoke) answers the same and leaves the new one.
    assert with_token(fresh).delete(TOKEN_URL).status_code == 204
    assert with_token(fresh).delete(TOKEN_URL).status_code == 401


def test_delete_needs_a_signed_in_caller_and_revokes_only_their_token(
    owner, stranger, campaign, stolen
):
    other = sign_in("stranger", "pw-stranger")

    anonymous = APIClient().delete(TOKEN_URL)
    wrong = with_token("not-a-real-token").delete(TOKEN_URL)
    own = with_token(other).delete(TOKEN_URL)

    assert anonymous.status_code == wrong.status_code == 401
    assert own.status_code == 204
    assert reads(stolen, campaign) == 200  # the stranger revoked only their own


def test_a_session_delete_needs_csrf(owner, campaign, stolen):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(owner)

    refused = client.delete(TOKEN_URL)

    assert refused.status_code == 403
    assert reads(stolen, campaign) == 200
