"""Integration tests use real PostgreSQL, real Redis and a real Celery worker process.

They need the whole run configured for the real services (the CI run sets
DATABASE_URL=postgres://… and REDIS_URL=redis://…); otherwise they skip with the reason,
or fail when BABEL_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings

from tests.services import database_is_postgres, redis_reachable, unavailable


@pytest.fixture
def real_services(settings):
    """The Redis URL, once PostgreSQL and Redis are known to be real; tasks go non-eager."""
    if not database_is_postgres():
        unavailable("the test database is not PostgreSQL (set DATABASE_URL=postgres://…)")
    url = django_settings.REDIS_URL
    if not url:
        unavailable("REDIS_URL is not set, so Celery has no real broker")
    if not redis_reachable(url):
        unavailable(f"Redis is not reachable at {url}")
    from babel_site.celery import app

    app.conf.task_always_eager = False
    settings.CELERY_TASK_ALWAYS_EAGER = False
    yield url
    app.conf.task_always_eager = True
