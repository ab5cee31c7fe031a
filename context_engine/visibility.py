"""Fog of war: who may read what (SPEC §4). Pure functions, used by every reader.

The Django side decides visibility in one selector (`campaigns.reads.selectors`), which
narrows rows in SQL and then confirms each row with `can_read` here, so both the
database filter and these rules must agree before anything is shown: fail closed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PUBLIC = None
DM_ONLY: tuple[str, ...] = ("DM",)
ROLE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.'-]{0,63}$")

Visibility = tuple[str, ...] | None
NOBODY: tuple[str, ...] = ()  # a derived artifact no agent may read (empty intersection)


class VisibilityError(ValueError):
    """A visibility value that cannot be stored. ``field`` names the offending part."""

    def __init__(self, message: str, field: str = "visibility"):
        super().__init__(message)
        self.field = field
        self.message = message


def validate_visibility(value: object, roles: Iterable[str]) -> Visibility:
    """Check a visibility value against an experiment's roles and normalise it.

    ``None`` is public. Otherwise a non-empty list of known roles, returned as a sorted,
    de-duplicated tuple so equal audiences compare equal. Raises VisibilityError.
    """
    if value is None:
        return PUBLIC
    if not isinstance(value, (list, tuple)):
        raise VisibilityError("Visibility must be null (public) or a list of roles.")
    if not value:
        raise VisibilityError("Visibility may not be an empty list: use null for public.")
    known = set(roles)
    normalised: set[str] = set()
    for item in value:
        if not isinstance(item, str):
            raise VisibilityError(f"Visibility entries must be role names, got {item!r}.")
        if item not in known:
            raise VisibilityError(
                f"Unknown role {item!r} in visibility; roles are: {', '.join(sorted(known))}."
            )
        normalised.add(item)
    return tuple(sorted(normalised))


def parse_stored_visibility(value: object, dm_roles: tuple[str, ...] = DM_ONLY) -> Visibility:
    """Read a stored visibility value. Anything corrupt is treated as DM-only (fail closed).

    Valid stored values are null (public) or a non-empty list of strings; this must agree
    exactly with the SQL filter in `campaigns.reads.selectors`.
    """
    if value is None:
        return PUBLIC
    if isinstance(value, (list, tuple)) and value and all(isinstance(i, str) for i in value):
        return tuple(sorted(set(value)))
    return tuple(sorted(dm_roles))


def can_read(visibility: Visibility, role: str | None, *, omniscient: bool = False) -> bool:
    """May ``role`` read an item with this visibility?

    ``omniscient`` is for judges and the experiment's human owner, who read the raw log.
    ``role=None`` without omniscience reads only public items.
    """
    if omniscient:
        return True
    if visibility is None:
        return True
    return role is not None and role in visibility


def intersect(audiences: Iterable[Visibility]) -> Visibility:
    """Audience of an artifact derived from several sources: the intersection.

    Public ∩ X = X. An empty intersection is ``()``: no agent may read the artifact
    (only judges and the owner), never public and never silently the DM's.
    """
    result: set[str] | None = None
    for audience in audiences:
        if audience is None:
            continue
        result = set(audience) if result is None else result & set(audience)
    if result is None:
        return PUBLIC
    return tuple(sorted(result))


def audience_key(visibility: Visibility) -> str:
    """A portable string form for SQL filtering: ``*`` for public, else ``|A|B|``."""
    if visibility is None:
        return "*"
    return "|" + "|".join(sorted(visibility)) + "|"
