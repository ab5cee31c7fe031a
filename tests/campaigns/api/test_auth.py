"""Auth: `POST /api/auth/token/`, ``Authorization: Token …``, and session cookies."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from campaigns.models import Experiment

pytestmark = pytest.mark.django_db

TOKEN_URL = "/api/auth/token/"


def test_a_token_for_username_and_password(owner):
    response = APIClient().post(
        TOKEN_URL, {"username": "owner", "password": "pw-owner"}, format="json"
    )
    assert response.status_code == 200
    token = response.json()["token"]
    assert Token.objects.get(user=owner).key == token
    # The same token comes back on a second call.
    again = APIClient().post(
        TOKEN_URL, {"username": "owner", "password": "pw-owner"}, format="json"
    )
    assert again.json()["token"] == token


def test_the_token_authenticates_api_calls(owner, campaign):
    token = (
        APIClient()
        .post(TOKEN_URL, {"username": "owner", "password": "pw-owner"}, format="json")
        .json()["token"]
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get(f"/api/experiments/{campaign.pk}/")
    assert response.status_code == 200
    assert response.json()["id"] == campaign.pk


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"username": "owner", "password": "wrong"}, "non_field_errors"),
        ({"username": "nobody", "password": "pw"}, "non_field_errors"),
        ({"username": "owner"}, "password"),
        ({}, "username"),
    ],
)
def test_bad_credentials_are_400_and_issue_no_token(owner, body, field):
    response = APIClient().post(TOKEN_URL, body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Token.objects.exists()


def test_the_token_endpoint_is_post_only(owner):
    assert APIClient().get(TOKEN_URL).status_code == 405


def test_a_wrong_token_is_401(campaign):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.get("/api/experiments/").status_code == 401


def test_session_auth_reads_and_writes_with_csrf(owner, campaign):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.get(f"/api/experiments/{campaign.pk}/").status_code == 200
    # A session write without the CSRF token is refused, and stores nothing.
    refused = client.post("/api/experiments/", {"name": "No CSRF"}, format="json")
    assert refused.status_code == 403
    assert not Experiment.objects.filter(name="No CSRF").exists()
    client.get("/accounts/login/")  # sets the csrftoken cookie
    csrf = client.cookies["csrftoken"].value
    accepted = client.post(
        "/api/experiments/", {"name": "With CSRF"}, format="json", HTTP_X_CSRFTOKEN=csrf
    )
    assert accepted.status_code == 201
    assert Experiment.objects.get(name="With CSRF").owner == owner


def test_anonymous_gets_401_everywhere(campaign):
    client = APIClient()
    for path in (
        "/api/experiments/",
        f"/api/experiments/{campaign.pk}/",
        f"/api/experiments/{campaign.pk}/turns/",
        f"/api/experiments/{campaign.pk}/context/DM/",
        f"/api/experiments/{campaign.pk}/export/",
    ):
        assert client.get(path).status_code == 401, path
    assert client.post("/api/experiments/", {"name": "x"}, format="json").status_code == 401
    assert not Experiment.objects.filter(name="x").exists()
