"""Which real services this test run can reach, and what to do when one is missing.

Locally a missing PostgreSQL, Redis or Chromium skips the tests that need it, with the
reason. With BABEL_REQUIRE_SERVICES=1 (set by CI) the same absence is a failure, so a
green CI run proves those tests really ran.
"""

from __future__ import annotations

import os
import shutil
import socket
from urllib.parse import urlparse

import pytest
from django.conf import settings


def services_required() -> bool:
    return os.environ.get("BABEL_REQUIRE_SERVICES", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> None:
    """Skip locally; fail when the run requires real services."""
    if services_required():
        pytest.fail(f"BABEL_REQUIRE_SERVICES is set but {reason}", pytrace=False)
    pytest.skip(reason)


def database_is_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def redis_url() -> str:
    return os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


def redis_reachable(url: str | None = None) -> bool:
    parsed = urlparse(url or redis_url())
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 6379), 1):
            return True
    except OSError:
        return False


def chromium_path() -> str | None:
    for candidate in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(candidate)
        if found:
            return found
    return None
