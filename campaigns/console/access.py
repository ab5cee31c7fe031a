"""The shared access helpers, raising Django's own exceptions for plain views.

There is one rule (`campaigns.access`, the API's too); this module only translates DRF's
`NotFound` / `PermissionDenied` into `Http404` / `PermissionDenied` so the console
answers exactly what the API answers, and adds the console's own reading of ``?as=``.
"""

from __future__ import annotations

from contextlib import contextmanager

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from rest_framework import exceptions as drf

from campaigns import access as rules
from campaigns.access import Access
from campaigns.models import Participant
from campaigns.reads import selectors
from campaigns.reads.selectors import Viewer


@contextmanager
def _django_errors():
    try:
        yield
    except drf.NotFound as exc:
        raise Http404(str(exc.detail)) from None
    except drf.PermissionDenied as exc:
        raise PermissionDenied(str(exc.detail)) from None


def experiment_for(request, pk, *, write: bool = False) -> Access:
    """The campaign as ``request.user`` may use it: 404 for outsiders, 403 on a refused write."""
    with _django_errors():
        return rules.get_experiment_for(request.user, pk, write=write)


def viewer_for(request, access: Access) -> tuple[Viewer, str]:
    """The viewer a page reads as, and the ``?as=`` role in force ("" when none).

    Owner and staff may narrow to any role; a linked player's ``as`` is ignored (they
    always read their own view). An unknown role is a 404.
    """
    as_role = request.GET.get("as", "").strip()
    if not access.viewer.omniscient or not access.can_edit:
        return access.viewer, ""
    try:
        viewer = rules.reading_viewer(access, as_role or None)
    except ValidationError:
        raise Http404("No such role in this campaign.") from None
    return viewer, (as_role if viewer.role == as_role else "")


def check_context_role(access: Access, role: str) -> None:
    """Whose inspector this user may open: editors and judges any role; a player only their
    own — another role's inspector is a 404, as if it did not exist."""
    with _django_errors():
        try:
            rules.check_context_role(access, role)
        except drf.PermissionDenied:
            raise drf.NotFound("No such inspector.") from None


def check_turn_post(access: Access, data: dict) -> None:
    with _django_errors():
        rules.check_turn_post(access, data)


def get_job_for(request, task_id):
    with _django_errors():
        return rules.get_job_for(request.user, task_id)


def get_upload_for(request, upload_id):
    with _django_errors():
        return rules.get_upload_for(request.user, upload_id)


def get_lore_for(access: Access, viewer: Viewer, lid):
    with _django_errors():
        return rules.get_lore_for(access, viewer, lid)


def can_review_held(access: Access) -> bool:
    return rules.can_review_held(access)


def get_held_turn_for(access: Access, tid):
    with _django_errors():
        return rules.get_held_turn_for(access, tid)


def can_fix_turns(access: Access) -> bool:
    return rules.can_fix_turns(access)


def get_turn_to_fix(access: Access, tid):
    with _django_errors():
        return rules.get_turn_to_fix(access, tid)


def can_write_notes(access: Access) -> bool:
    """GM notes are the DM's: editors, or a user linked to a DM participant."""
    return access.can_edit or (access.viewer.is_dm and not access.viewer.omniscient)


def acting_role(access: Access) -> str | None:
    """Who an editor speaks as by default: the first DM participant."""
    if not access.can_edit:
        return access.viewer.role
    return (
        access.experiment.participants.filter(kind=Participant.Kind.DM)
        .order_by("order", "id")
        .values_list("role", flat=True)
        .first()
    )


def roles_of(access: Access) -> list[str]:
    return list(
        access.experiment.participants.order_by("order", "id").values_list("role", flat=True)
    )


def dm_recipients(access: Access) -> list[str]:
    """Whom a player's whisper goes to by default (SPEC §4: the UI adds the DM)."""
    if access.can_edit:
        return []
    return list(
        access.experiment.participants.filter(kind=Participant.Kind.DM)
        .exclude(role=access.viewer.role or "")
        .values_list("role", flat=True)
    )


__all__ = ["Access", "selectors"]
