"""Rendering helpers shared by the console's views."""

from __future__ import annotations

from functools import cache, wraps

from django.conf import settings
from django.contrib.auth.decorators import login_required as django_login_required
from django.shortcuts import render, resolve_url
from django.utils.http import urlencode
from django_htmx.http import HttpResponseClientRedirect

from campaigns.access import Access
from campaigns.reads import selectors

PAGE_NAV = (
    ("console:campaign", "Timeline"),
    ("console:whispers", "Whispers"),
    ("console:notes", "GM notes"),
    ("console:lore", "World Bible"),
    ("console:memory", "Memory"),
    ("console:log", "Session log"),
)
INVALID = 422  # a bad form: re-rendered with its errors (htmx is configured to swap it)


def page(request, template: str, context: dict, *, partial: str | None = None, status=200):
    """The full page, or only ``partial`` (an inline `{% partialdef %}`) for htmx."""
    name = f"{template}#{partial}" if partial and request.htmx else template
    return render(request, name, context, status=status)


def nav_for(access: Access) -> tuple[tuple[str, str], ...]:
    """The tabs that apply to this user: GM notes are the DM side's (an editor, or a user
    seated as a DM, a judge); a player would only find "No GM notes" there."""
    dm_side = access.can_edit or access.viewer.is_dm or access.viewer.omniscient
    return tuple(item for item in PAGE_NAV if dm_side or item[0] != "console:notes")


def campaign_context(access: Access, viewer, *, as_role: str = "", active: str = "") -> dict:
    """What every campaign page's header and tabs need. ``held_count`` (the DM side, not
    while viewing as a role) is counted only if the header shows it."""
    reviewer = not as_role and (access.can_edit or access.viewer.reviews_held)

    @cache
    def held_count() -> int:
        return selectors.held_turns_visible_to(
            experiment=access.experiment, viewer=access.viewer
        ).count()

    return {
        "access": access,
        "experiment": access.experiment,
        "viewer": viewer,
        "as_role": as_role,
        "can_edit": access.can_edit,
        "nav": nav_for(access),
        "active": active,
        "reviewer": reviewer,
        "held_count": held_count if reviewer else 0,
    }


def login_required(view):
    """Django's `login_required`, but an htmx request gets ``HX-Redirect`` to the login page
    (for the page the browser shows), so an expired session never swaps the login form into
    a fragment such as a progress bar."""
    plain = django_login_required(view)

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.htmx and not request.user.is_authenticated:
            target = request.htmx.current_url_abs_path or request.get_full_path()
            login = resolve_url(settings.LOGIN_URL)
            return HttpResponseClientRedirect(f"{login}?{urlencode({'next': target})}")
        return plain(request, *args, **kwargs)

    return wrapper
