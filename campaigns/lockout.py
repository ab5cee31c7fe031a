"""What a locked-out sign-in gets (django-axes calls this; ``AXES_LOCKOUT_CALLABLE``).

The login form gets a page saying so, the API a JSON body; both are 429 with
``Retry-After`` so a client knows when to try again. Never a 500, never which of the
username or the address was locked.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.shortcuts import render

from babel_site.errors import error_response, wants_json


def retry_after_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def lockout_response(request, original_response=None, credentials=None):
    seconds = retry_after_seconds()
    if wants_json(request):
        response = error_response(
            request, 429, f"Too many failed sign-in attempts. Try again in {seconds} seconds."
        )
    else:
        context = {
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "retry_minutes": math.ceil(seconds / 60),
        }
        response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(seconds)
    return response
