"""Finding 2: password guessing was unlimited on the token endpoint and the login form.
Now the 11th failed try for one username, or from one address, within the cool-off is a
429 with Retry-After — even with the right password — on both doors, which share one
count. Writes are rate-limited per user."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from campaigns.api.throttles import WriteRateThrottle
from tests.factories import make_user

pytestmark = pytest.mark.django_db

TOKEN_URL = "/api/auth/token/"
LOGIN_URL = "/accounts/login/"
PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def _fast_hashing(settings):
    """Dozens of sign-ins per test: a cheap hasher keeps them fast (the count is the same)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def victim(db):
    user = make_user("victim")
    user.set_password(PASSWORD)
    user.save()
    return user


def token_try(api, password, *, username="victim", address="203.0.113.7"):
    return api(None).post(
        TOKEN_URL,
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
    )


def test_the_token_endpoint_locks_a_username_after_ten_failures(api, victim):
    limit = settings.AXES_FAILURE_LIMIT
    assert limit <= 10
    # From many addresses, so only the username count can stop it.
    for attempt in range(limit):
        response = token_try(api, f"guess-{attempt}", address=f"198.51.100.{attempt + 1}")
        assert response.status_code == 400, attempt

    locked = token_try(api, PASSWORD, address="198.51.100.200")

    assert locked.status_code == 429
    assert int(locked["Retry-After"]) == int(settings.AXES_COOLOFF_TIME.total_seconds())
    assert "token" not in locked.json()


def test_the_token_endpoint_locks_an_address_after_ten_failures(api, victim):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        assert token_try(api, "x", username=f"someone-{attempt}").status_code == 400

    locked = token_try(api, PASSWORD)  # the right password for another username

    assert locked.status_code == 429
    assert "Retry-After" in locked
    # Another address is not locked out: the victim can still sign in from home.
    assert token_try(api, PASSWORD, address="192.0.2.55").status_code == 200


def test_a_success_before_the_limit_resets_the_count(api, victim):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        token_try(api, "wrong")
    assert token_try(api, PASSWORD).status_code == 200
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert token_try(api, "wrong").status_code == 400
    assert token_try(api, PASSWORD).status_code == 200


def test_the_login_form_locks_out_with_a_page_not_a_500(victim):
    browser = Client(REMOTE_ADDR="203.0.113.9")
    statuses = [
        browser.post(LOGIN_URL, {"username": "victim", "password": f"g{attempt}"}).status_code
        for attempt in range(settings.AXES_FAILURE_LIMIT)
    ]
    # The form again with its error, until the failure that reaches the limit locks.
    assert statuses == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    assert "_auth_user_id" not in browser.session

    locked = browser.post(LOGIN_URL, {"username": "victim", "password": PASSWORD})

    assert locked.status_code == 429
    assert "Retry-After" in locked
    assert b"Too many sign-in attempts" in locked.content
    assert "_auth_user_id" not in browser.session


def test_the_form_and_the_token_endpoint_share_one_count(api, victim):
    browser = Client(REMOTE_ADDR="203.0.113.9")
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        browser.post(LOGIN_URL, {"username": "victim", "password": f"g{attempt}"})

    assert token_try(api, PASSWORD, address="198.51.100.9").status_code == 429


def test_writes_are_rate_limited_per_user(api, campaign, owner, monkeypatch):
    monkeypatch.setattr(WriteRateThrottle, "THROTTLE_RATES", {"writes": "3/minute"})
    url = f"/api/experiments/{campaign.pk}/turns/"
    body = {"speaker": "DM", "kind": "narrative", "content": "Again."}

    statuses = [api(owner).post(url, body, format="json").status_code for _ in range(4)]
    reads = api(owner).get(url)

    assert statuses == [201, 201, 201, 429]
    assert reads.status_code == 200  # reading is not throttled
    assert reads.json()["count"] == 3
