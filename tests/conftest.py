"""Shared fixtures: personas (owner, dm, player, other_player, stranger) and campaigns."""

from __future__ import annotations

import os
import uuid

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.factories import make_experiment, make_user

hypothesis_settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.register_profile(
    "ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(autouse=True)
def _eager_celery(settings):
    """Unit tests run Celery eagerly; integration tests opt into the real broker."""
    from babel_site.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.CELERY_TASK_ALWAYS_EAGER = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    """Each test counts throttles and failed sign-ins from zero, in the real cache backend
    (Redis when REDIS_URL is set): a key prefix of its own, never a flush of the database
    the Celery broker shares."""
    from axes.handlers.proxy import AxesProxyHandler

    caches = {name: dict(config) for name, config in settings.CACHES.items()}
    caches["default"]["KEY_PREFIX"] = f"test-{uuid.uuid4().hex}"
    settings.CACHES = caches
    AxesProxyHandler.implementation = None  # axes holds its cache object: make it re-read
    from campaigns.services import pack_cache

    pack_cache.clear()  # the per-process pack cache too
    yield
    AxesProxyHandler.implementation = None
    _close_redis_pools()


def _close_redis_pools() -> None:
    """Disconnect the test's Redis cache connections: Django's cache ``close()`` keeps
    them, and each test's own cache (its own key prefix) opened a pool that otherwise
    stayed open until garbage collection — about a socket for every test."""
    from django.core.cache import caches

    for cache in caches.all(initialized_only=True):
        for pool in getattr(getattr(cache, "_cache", None), "_pools", {}).values():
            pool.disconnect()


@pytest.fixture(autouse=True)
def _fresh_live_channels(settings, monkeypatch):
    """Each test's live channels are its own (campaign ids repeat across runs and rolled-
    back tests): a key prefix of its own, also for the worker processes it starts."""
    prefix = f"babel:live:test-{uuid.uuid4().hex}"
    settings.BABEL_LIVE_PREFIX = prefix
    monkeypatch.setenv("BABEL_LIVE_PREFIX", prefix)


@pytest.fixture
def owner(db):
    return make_user("owner")


@pytest.fixture
def stranger(db):
    return make_user("stranger")


@pytest.fixture
def staff_user(db):
    return make_user("staffer", is_staff=True, is_superuser=True)


@pytest.fixture
def campaign(db, owner):
    """An experiment owned by `owner` with a DM and two players, Thorin and Cassia."""
    return make_experiment(owner=owner)


@pytest.fixture
def player(campaign):
    """The user who plays Thorin."""
    user = make_user("thorin_player")
    campaign.participants.filter(role="Thorin").update(user=user)
    return user


@pytest.fixture
def other_player(campaign):
    """The user who plays Cassia."""
    user = make_user("cassia_player")
    campaign.participants.filter(role="Cassia").update(user=user)
    return user
