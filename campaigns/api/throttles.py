"""API throttles, backed by the cache (Redis with ``REDIS_URL``, local memory otherwise).

- `WriteRateThrottle`: writes (POST, PATCH, PUT, DELETE) per user, or per address when
  anonymous, at ``BABEL_WRITE_RATE``. Reads are not throttled.
- `LoginFailureThrottle`: the token endpoint refuses a username or an address that
  django-axes has locked out after ``AXES_FAILURE_LIMIT`` failed sign-ins — the same
  count the login form uses, so the two doors share one lock.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_credentials
from rest_framework.throttling import BaseThrottle, UserRateThrottle

from campaigns.lockout import retry_after_seconds

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class WriteRateThrottle(UserRateThrottle):
    scope = "writes"

    def allow_request(self, request, view):
        if request.method in SAFE_METHODS:
            return True
        return super().allow_request(request, view)


class LoginFailureThrottle(BaseThrottle):
    def allow_request(self, request, view):
        username = request.data.get("username") if isinstance(request.data, dict) else None
        credentials = get_credentials(username=username if isinstance(username, str) else None)
        return AxesProxyHandler.is_allowed(request, credentials)

    def wait(self):
        return retry_after_seconds()
