"""`/campaigns/<id>/cast/` — add, edit and remove participants (issue 24).

The owner's and staff's page (a player gets 403: it shows every secret and identity).
Each form is cleaned by `participant_fields` through `participant_create` /
`participant_update`, exactly as `POST /api/experiments/{id}/participants/` is.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST
from rest_framework.exceptions import NotFound

from campaigns.access import parse_id
from campaigns.console import access as console_access
from campaigns.console.setup_forms import MODEL_PRESETS, ParticipantForm, attach_setup_errors
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.models import Participant
from campaigns.services.experiments import (
    participant_create,
    participant_delete,
    participant_history,
    participant_update,
)
from campaigns.services.providers import (
    check_as_dict,
    check_connection_changes,
    clean_provider_fields,
    connection_after,
    provider_check,
)

TEMPLATE = "campaigns/console/cast.html"


def _participant(access, pid) -> Participant:
    try:
        key = parse_id(pid, what="Participant")
    except NotFound:  # a junk id is a 404 here too, never a 500
        raise Http404("No such participant.") from None
    participant = access.experiment.participants.filter(pk=key).first()
    if participant is None:
        raise Http404("No such participant.")
    return participant


def _context(access, *, add_form=None, bound: tuple[int, ParticipantForm] | None = None):
    ctx = campaign_context(access, access.viewer, active="console:cast")
    rows = []
    for participant in access.experiment.participants.order_by("order", "id"):
        form = bound[1] if bound and bound[0] == participant.pk else None
        rows.append(
            {
                "participant": participant,
                "form": form
                or ParticipantForm(
                    initial=ParticipantForm.initial_for(participant), prefix=f"p{participant.pk}"
                ),
                "open": form is not None,
                "history": participant_history(participant),
            }
        )
    ctx["rows"] = rows
    ctx["add_form"] = add_form or ParticipantForm(prefix="new")
    ctx["presets"] = MODEL_PRESETS
    return ctx


@login_required
@require_http_methods(["GET", "POST"])
def cast(request, pk):
    """GET: the cast with an editor per seat. POST: add a participant."""
    access = console_access.experiment_for(request, pk, write=True)
    if request.method == "GET":
        return page(request, TEMPLATE, _context(access), partial="cast")
    form = ParticipantForm(request.POST, prefix="new")
    created = None
    if form.is_valid():
        try:
            fields = form.participant_fields()
            with transaction.atomic():  # every field checked first, then the server asked
                made = participant_create(experiment=access.experiment, **fields)
                check_connection_changes(fields)
            created = made
        except ValidationError as exc:
            attach_setup_errors(form, exc)
    if created is None:
        ctx = _context(access, add_form=form)
        return page(request, TEMPLATE, ctx, partial="cast", status=INVALID)
    if not request.htmx:
        return redirect("console:cast", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access), partial="cast")


@login_required
@require_POST
def participant_edit(request, pk, pid):
    """Save one seat's form (every field, as the API cleans it)."""
    access = console_access.experiment_for(request, pk, write=True)
    participant = _participant(access, pid)
    form = ParticipantForm(request.POST, prefix=f"p{participant.pk}")
    saved = False
    if form.is_valid():
        try:
            fields = form.participant_fields()
            changed = _changed(participant, fields)
            before = Participant.objects.get(pk=participant.pk)
            with transaction.atomic():  # every field checked first, then the server asked
                participant_update(participant=participant, **fields)
                check_connection_changes(changed, before)
            saved = True
        except ValidationError as exc:
            attach_setup_errors(form, exc)
    if not saved:
        ctx = _context(access, bound=(participant.pk, form))
        return page(request, TEMPLATE, ctx, partial="cast", status=INVALID)
    if not request.htmx:
        return redirect("console:cast", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access), partial="cast")


def _changed(participant: Participant, fields: dict) -> dict:
    """The fields this save changes (an unchanged model is not asked again)."""
    return {k: v for k, v in fields.items() if getattr(participant, k, None) != v}


@login_required
@require_POST
def participant_test(request, pk, pid):
    """ "Test connection": ask the seat's server (its stored settings) whether it answers,
    serves the model, and how large its window is. The key is never shown."""
    access = console_access.experiment_for(request, pk, write=True)
    participant = _participant(access, pid)
    ctx = _context(access)
    merged = connection_after({}, participant)
    try:
        clean_provider_fields(**merged, allow_human=False)
        found = provider_check(**merged)
        if isinstance(found, ValidationError):
            raise found
    except ValidationError as exc:
        ctx["tested"] = (participant.pk, {"ok": False, "errors": exc.messages})
    else:
        ctx["tested"] = (participant.pk, check_as_dict(found))
    return page(request, TEMPLATE, ctx, partial="cast")


@login_required
@require_POST
def participant_remove(request, pk, pid):
    """Remove a seat with no history (the button asks first); one in the log is refused."""
    access = console_access.experiment_for(request, pk, write=True)
    participant = _participant(access, pid)
    try:
        participant_delete(participant=participant)
    except ValidationError as exc:
        form = ParticipantForm(
            initial=ParticipantForm.initial_for(participant), prefix=f"p{participant.pk}"
        )
        form.is_bound = False
        ctx = _context(access, bound=(participant.pk, form))
        ctx["remove_error"] = (participant.pk, exc.messages)
        return page(request, TEMPLATE, ctx, partial="cast", status=INVALID)
    if not request.htmx:
        return redirect("console:cast", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access), partial="cast")
