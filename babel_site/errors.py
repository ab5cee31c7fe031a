"""Error pages that never show a traceback or a setting: JSON under ``/api/``, a plain
page elsewhere. Django uses these whenever ``DJANGO_DEBUG`` is off (the default)."""

from __future__ import annotations

from django.http import JsonResponse
from django.shortcuts import render

TITLES = {
    400: "Bad request",
    403: "Forbidden",
    404: "Not found",
    413: "Request too large",
    429: "Too many requests",
    500: "Server error",
}
MESSAGES = {
    400: "The request could not be understood.",
    403: "You may not do this.",
    404: "There is nothing here.",
    500: "Something went wrong on our side. Nothing you sent was half-stored.",
}


def wants_json(request) -> bool:
    return request.path.startswith("/api/")


def error_response(request, status: int, detail: str | None = None):
    detail = detail or MESSAGES.get(status, TITLES.get(status, "Error"))
    if wants_json(request):
        return JsonResponse({"detail": detail}, status=status)
    context = {"status": status, "title": TITLES.get(status, "Error"), "detail": detail}
    return render(request, "error.html", context, status=status)


def bad_request(request, exception=None):
    return error_response(request, 400)


def permission_denied(request, exception=None):
    return error_response(request, 403)


def page_not_found(request, exception=None):
    return error_response(request, 404)


def server_error(request):
    return error_response(request, 500)
