"""Rendering helpers shared by the console's views."""

from __future__ import annotations

from django.shortcuts import render

from campaigns.api.access import Access

PAGE_NAV = (
    ("console:campaign", "Timeline"),
    ("console:whispers", "Whispers"),
    ("console:notes", "GM notes"),
    ("console:lore", "World Bible"),
    ("console:memory", "Memory"),
)
INVALID = 422  # a bad form: re-rendered with its errors (htmx is configured to swap it)


def page(request, template: str, context: dict, *, partial: str | None = None, status=200):
    """The full page, or only ``partial`` (an inline `{% partialdef %}`) for htmx."""
    name = f"{template}#{partial}" if partial and request.htmx else template
    return render(request, name, context, status=status)


def campaign_context(access: Access, viewer, *, as_role: str = "", active: str = "") -> dict:
    """What every campaign page's header and tabs need."""
    return {
        "access": access,
        "experiment": access.experiment,
        "viewer": viewer,
        "as_role": as_role,
        "can_edit": access.can_edit,
        "nav": PAGE_NAV,
        "active": active,
    }
