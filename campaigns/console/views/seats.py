"""Seats by invitation in the console (issue 23 ask 7, issue 24 ask 2).

- `/campaigns/<id>/seats/` (owner and staff): who plays each seat, a form that offers an
  open seat to a username, and the campaign's invitations with "Withdraw" on open ones.
- `/invitations/<iid>/accept/` and `…/decline/` (the invitee, from the dashboard): the
  same services as the API; anyone else's invitation is a 404.
"""

from __future__ import annotations

from contextlib import suppress

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework import exceptions as drf

from campaigns import access as rules
from campaigns.console import access as console_access
from campaigns.console.forms import InvitationForm, attach_errors
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.reads import selectors
from campaigns.services.seats import (
    invitation_accept,
    invitation_create,
    invitation_decline,
    invitation_withdraw,
)

TEMPLATE = "campaigns/console/seats.html"


def _seats(access) -> tuple[list[dict], list]:
    """Each seat with its open offer (if any), and every invitation of the campaign."""
    invitations = list(selectors.invitations_of(experiment=access.experiment))
    pending = {i.participant_id: i for i in invitations if i.status == "pending"}
    participants = access.experiment.participants.select_related("user").order_by("order", "id")
    seats = [{"participant": p, "pending": pending.get(p.pk)} for p in participants]
    return seats, invitations


def _context(access, *, form=None) -> dict:
    ctx = campaign_context(access, access.viewer, active="console:seats")
    seats, invitations = _seats(access)
    open_roles = [s["participant"].role for s in seats if s["participant"].user_id is None]
    ctx["seats"] = seats
    ctx["invitations"] = invitations
    ctx["form"] = form or (InvitationForm(roles=open_roles) if open_roles else None)
    return ctx


@login_required
@require_http_methods(["GET", "POST"])
def seats(request, pk):
    access = console_access.experiment_for(request, pk, write=True)
    if request.method == "GET":
        return page(request, TEMPLATE, _context(access), partial="seats")
    open_roles = list(
        access.experiment.participants.filter(user__isnull=True).values_list("role", flat=True)
    )
    form = InvitationForm(request.POST, roles=open_roles)
    if form.is_valid():
        try:
            invitation_create(
                experiment=access.experiment,
                role=form.cleaned_data["role"],
                username=form.cleaned_data["username"],
                invited_by=request.user,
            )
        except ValidationError as exc:
            attach_errors(form, exc)
    if form.errors:
        ctx = _context(access, form=form)
        return page(request, TEMPLATE, ctx, partial="seats", status=INVALID)
    if not request.htmx:
        return redirect("console:seats", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access), partial="seats")


@login_required
@require_POST
def invitation_withdraw_post(request, pk, iid):
    access = console_access.experiment_for(request, pk, write=True)
    try:
        invitation = rules.get_campaign_invitation(access, iid)
    except drf.NotFound:
        raise Http404("Invitation not found.") from None
    with suppress(ValidationError):  # answered meanwhile: the page shows how
        invitation_withdraw(invitation=invitation)
    if not request.htmx:
        return redirect("console:seats", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access), partial="seats")


def _own_invitation(request, iid):
    try:
        return rules.get_invitation_for(request.user, iid)
    except drf.NotFound:
        raise Http404("Invitation not found.") from None


@login_required
@require_POST
def invitation_answer(request, iid, answer):
    """Accept (then open the campaign) or decline (back to the dashboard)."""
    invitation = _own_invitation(request, iid)
    try:
        if answer == "accept":
            invitation_accept(invitation=invitation, user=request.user)
        elif answer == "decline":
            invitation_decline(invitation=invitation, user=request.user)
        else:  # pragma: no cover - the URLs name only these two
            raise PermissionDenied
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("console:dashboard")
    if answer == "accept":
        return redirect("console:campaign", pk=invitation.experiment_id)
    return redirect("console:dashboard")
