"""The timeline's "Edit" and "Regenerate" (issue 24 ask 4), for the DM side only.

Each answers one turn row (`_turn_row.html`): the row, its edit form, or the row while a
regeneration runs (it polls itself every 2 s and, once the Job is done, shows the new
text or why the old one stayed). Who may is `access.get_turn_to_fix`: a turn the reader
does not read is a 404 for everyone; the work is `services.turn_fixes`.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import trigger_client_event

from campaigns.access import job_as_read_by
from campaigns.console import access as console_access
from campaigns.console.forms import TurnEditForm, attach_errors
from campaigns.console.views.base import INVALID, login_required
from campaigns.models import Job
from campaigns.reads import numbering, selectors
from campaigns.services import relay
from campaigns.services.turn_fixes import regenerable_ids, step_regenerate_start, turn_edit

ROW = "campaigns/console/_turn_row.html"
TURNS_CHANGED = "turns-changed"


def _fixer(request, pk, tid):
    access = console_access.experiment_for(request, pk)
    return access, console_access.get_turn_to_fix(access, tid)


def _row(request, access, turn, *, status=200, **extra):
    turn.revision_list = list(
        selectors.turn_revisions_visible_to(
            experiment=access.experiment, viewer=access.viewer, turn_ids=[turn.pk]
        )
    )
    turn.regenerable = turn.pk in regenerable_ids(experiment=access.experiment, turns=[turn])
    (turn,) = numbering.shown_turns(
        experiment=access.experiment, viewer=access.viewer, turns=[turn]
    )
    ctx = {
        "turn": turn,
        "experiment": access.experiment,
        "can_edit": access.can_edit,
        "can_fix": True,
        "speakers": console_access.roles_of(access),
        **extra,
    }
    if ctx.get("editing") and "edit_form" not in ctx:
        ctx["edit_form"] = TurnEditForm(
            initial={"content": turn.content}, auto_id=f"t{turn.shown_id}-%s"
        )
    return render(request, ROW, ctx, status=status)


def _following(request, access, turn, job: Job):
    """The row with its regeneration's Job line. Once the Job has succeeded the timeline
    is told to refresh, for the step's other turns took new text too."""
    turn.refresh_from_db()
    response = _row(request, access, turn, job=job, running=job.status in relay.ACTIVE)
    if job.status == Job.Status.SUCCEEDED:
        response = trigger_client_event(response, TURNS_CHANGED)
    return response


def _job(request, access, job_id) -> Job:
    job, job_access = console_access.get_job_for(request, job_id)
    if job_access.experiment.pk != access.experiment.pk or job.kind != Job.Kind.REGENERATE:
        raise Http404("No such job in this campaign.")
    return job_as_read_by(job, access)


@login_required
@require_http_methods(["GET", "POST"])
def turn_fix(request, pk, tid):
    """GET: the row (cancel an edit; ``?job=`` follows a regeneration). POST: save."""
    access, turn = _fixer(request, pk, tid)
    if request.method == "GET":
        job_id = request.GET.get("job")
        if not job_id:
            return _row(request, access, turn)
        return _following(request, access, turn, _job(request, access, job_id))
    form = TurnEditForm(request.POST, auto_id=f"t{tid}-%s")
    if form.is_valid():
        try:
            turn = turn_edit(turn=turn, user=request.user, content=form.cleaned_data["content"])
        except ValidationError as exc:
            attach_errors(form, exc)
    if form.errors:
        return _row(request, access, turn, editing=True, edit_form=form, status=INVALID)
    if not request.htmx:
        return redirect("console:campaign", pk=access.experiment.pk)
    return _row(request, access, turn)


@login_required
@require_GET
def turn_fix_edit(request, pk, tid):
    access, turn = _fixer(request, pk, tid)
    return _row(request, access, turn, editing=True)


@login_required
@require_POST
def turn_regenerate(request, pk, tid):
    """Queue the model's step again; the row then follows its Job."""
    access, turn = _fixer(request, pk, tid)
    try:
        job = step_regenerate_start(turn=turn, user=request.user)
    except ValidationError as exc:
        errors = (
            exc.message_dict.get("turn", exc.messages)
            if hasattr(exc, "error_dict")
            else exc.messages
        )
        return _row(request, access, turn, regenerate_errors=errors, status=INVALID)
    if not request.htmx:
        return redirect("console:campaign", pk=access.experiment.pk)
    job.refresh_from_db()  # without a broker the task ran on commit: say how it ended
    return _following(request, access, turn, job_as_read_by(job, access))
