"""Console fixtures: logged-in clients per persona over the API's `secrets_campaign`.

The same planted markers as the API leak tests (`FORBIDDEN` / `ALLOWED`), so the console
is swept for exactly what the API is swept for.
"""

from __future__ import annotations

import pytest
from django.test import Client

from tests.campaigns.api.conftest import (  # noqa: F401  (fixtures re-exported)
    ALLOWED,
    FORBIDDEN,
    _fast_password_hashing,
    secrets_campaign,
)

PERSONAS = ("owner", "staff", "player", "stranger", "anonymous")


@pytest.fixture
def as_user():
    """``as_user(user)`` → a Django test client logged in as ``user`` (anonymous if None)."""

    def make(user):
        client = Client()
        if user is not None:
            client.force_login(user)
        return client

    return make


@pytest.fixture
def personas(owner, staff_user, player, stranger):
    return {
        "owner": owner,
        "staff": staff_user,
        "player": player,
        "stranger": stranger,
        "anonymous": None,
    }


@pytest.fixture
def exp(secrets_campaign):  # noqa: F811
    return secrets_campaign.experiment


HX = {"HTTP_HX_REQUEST": "true"}


def is_fragment(response) -> bool:
    body = response.content.decode()
    return "<html" not in body and "<body" not in body


def is_login_redirect(response) -> bool:
    """A plain request is redirected; an htmx one is told to send the browser there."""
    if response.get("HX-Redirect"):
        return response.status_code == 200 and "/accounts/login/" in response["HX-Redirect"]
    return response.status_code == 302 and "/accounts/login/" in response["Location"]
