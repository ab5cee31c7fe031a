"""The campaign page's Run panel: a round, Play N rounds (with Stop), /checkpoint,
/compress and /clear, and the bar of the job they start (issue 24).

One fragment (`_job_progress.html`, ``#run-panel``) holds the buttons and the bar. While
any job of the campaign runs it polls every 2 s and its buttons are disabled with a
spinner; a play's bar shows the step its round is on ("Round 16: Cassia acting…"). Once
nothing runs the poll answers 286 (stop) and fires ``job-done``, so the timeline and
the header catch up.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from campaigns.console import access as console_access
from campaigns.console.forms import CommandForm, attach_errors
from campaigns.console.setup_forms import PlayForm, attach_setup_errors
from campaigns.console.views.base import INVALID, login_required, page
from campaigns.models import Job
from campaigns.reads import selectors
from campaigns.services import relay
from campaigns.services.memory import run_command
from campaigns.services.play import play_start, play_stop
from campaigns.services.relay import round_start

TEMPLATE = "campaigns/console/_job_progress.html"
JOB_DONE = "job-done"
# command → (one line saying what it does, the question asked before it runs or "").
COMMAND_HELP = {
    "round": ("The DM narrates, each player acts, the DM answers whispers.", ""),
    "checkpoint": (
        "Catch the World Bible up and fold every digest to now; strain resets.",
        "Run /checkpoint? It updates the World Bible and every agent's digest.",
    ),
    "compress": (
        "Fold every digest to now, without resetting strain.",
        "Run /compress? It rewrites every agent's digest.",
    ),
    "clear": (
        "Drop the transcript beyond the minimum window from every pack; no digest update.",
        "Run /clear? Agents lose the transcript beyond the minimum window, and their "
        "digests are NOT updated first (run /checkpoint before, to keep what happened).",
    ),
}


def _busy(experiment) -> Job | None:
    """The newest job of the campaign that is still pending, running or waiting."""
    return (
        Job.objects.filter(experiment=experiment, status__in=relay.ACTIVE)
        .order_by("-created_at")
        .first()
    )


def _newest(experiment) -> Job | None:
    """The newest job, where a play stands for the rounds it played (it is updated after
    each of them, so it was still going when its newest round was created)."""
    jobs = Job.objects.filter(experiment=experiment).order_by("-created_at")
    newest = jobs.first()
    play = jobs.filter(kind=Job.Kind.PLAY).first()
    if newest is not None and play is not None and play.updated_at >= newest.created_at:
        return play
    return newest


def run_panel_context(
    experiment, job: Job | None = None, *, command_form=None, play_form=None, round_now=None
) -> dict:
    """What `_job_progress.html` needs: the shown job (the given one, else the newest
    running one, else the newest), whether anything runs, and a play's current round."""
    busy = _busy(experiment)
    if job is None:
        job = busy or _newest(experiment)
    if busy is not None and job is not None and job.status not in relay.ACTIVE:
        job = busy  # something else started meanwhile: follow it
    round_job = None
    if job is not None and job.kind == Job.Kind.PLAY:
        current = (job.result or {}).get("round_job")
        round_job = Job.objects.filter(pk=current).first() if current else None
    labels = dict(CommandForm.base_fields["command"].choices)
    return {
        "experiment": experiment,
        "job": job,
        "round_job": round_job,
        "busy": busy is not None,
        "playing": job is not None and job.kind == Job.Kind.PLAY and job.status in relay.ACTIVE,
        "commands": [
            (value, labels[value], help_line, confirm)
            for value, (help_line, confirm) in COMMAND_HELP.items()
        ],
        "command_form": command_form or CommandForm(),
        "play_form": play_form or PlayForm(),
        "round_now": round_now,
    }


def _panel(request, access, job, *, status=200, **forms) -> HttpResponse:
    round_now = None
    if request.htmx:  # the header's round number, swapped out of band: a round moves it
        round_now = selectors.current_round(experiment=access.experiment.pk)
    ctx = run_panel_context(access.experiment, job, round_now=round_now, **forms)
    response = page(request, TEMPLATE, ctx, status=status)
    if status == 200 and not ctx["busy"] and ctx["job"] is not None:
        if request.method == "GET" and request.htmx:
            response.status_code = HttpResponseStopPolling.status_code
        response = trigger_client_event(response, JOB_DONE, {"job": str(ctx["job"].pk)})
    return response


@login_required
@require_POST
def command_post(request, pk):
    """Run a round, /checkpoint, /compress or /clear: answers the Run panel."""
    access = console_access.experiment_for(request, pk, write=True)
    form = CommandForm(request.POST)
    job = None
    if form.is_valid():
        command = form.cleaned_data["command"]
        try:
            if command == "round":
                job = round_start(experiment=access.experiment, user=request.user)
            else:
                job = run_command(experiment=access.experiment, command=command, user=request.user)
        except ValidationError as exc:
            attach_errors(form, exc)
    if job is None:
        return _panel(request, access, None, status=INVALID, command_form=form)
    if not request.htmx:
        return redirect("console:campaign", pk=access.experiment.pk)
    return _panel(request, access, job)


@login_required
@require_POST
def play_post(request, pk):
    """Play N rounds (1–50) in the background: answers the Run panel, following it."""
    access = console_access.experiment_for(request, pk, write=True)
    form = PlayForm(request.POST)
    job = None
    if form.is_valid():
        try:
            job = play_start(
                experiment=access.experiment, rounds=form.cleaned_data["rounds"], user=request.user
            )
        except ValidationError as exc:
            attach_setup_errors(form, exc)
    if job is None:
        return _panel(request, access, None, status=INVALID, play_form=form)
    if not request.htmx:
        return redirect("console:campaign", pk=access.experiment.pk)
    return _panel(request, access, job)


def _job_of(request, access, job_id) -> Job:
    job, job_access = console_access.get_job_for(request, job_id)
    if job_access.experiment.pk != access.experiment.pk:
        raise Http404("No such job in this campaign.")
    return job


@login_required
@require_POST
def play_stop_post(request, pk, job_id):
    """Stop a play between rounds (at once if it waits for a human)."""
    access = console_access.experiment_for(request, pk, write=True)
    job = _job_of(request, access, job_id)
    form = CommandForm({"command": "round"})  # bound, so a refusal shows on the panel
    form.is_valid()
    try:
        job = play_stop(experiment=access.experiment, job=job)
    except ValidationError as exc:
        attach_setup_errors(form, exc)
    if form.errors:
        return _panel(request, access, job, status=INVALID, command_form=form)
    if not request.htmx:
        return redirect("console:campaign", pk=access.experiment.pk)
    return _panel(request, access, job)


@login_required
@require_POST
def human_skip_post(request, pk, job_id):
    """The DM side skips the human a waiting round waits for; answers the Run panel."""
    access = console_access.experiment_for(request, pk, write=True)
    job = _job_of(request, access, job_id)
    form = CommandForm({"command": "round"})  # bound, so a refusal shows on the bar
    form.is_valid()
    try:
        relay.human_skip(experiment=access.experiment, job=job)
    except ValidationError as exc:
        attach_errors(form, exc)
    job.refresh_from_db()
    if form.errors:
        return _panel(request, access, job, status=INVALID, command_form=form)
    if not request.htmx:
        return redirect("console:campaign", pk=access.experiment.pk)
    return _panel(request, access, None)  # the round, or the play it belongs to


@login_required
@require_GET
def job_progress(request, pk, job_id):
    """The Run panel following one job; 286 (htmx: stop polling) once nothing runs."""
    access = console_access.experiment_for(request, pk, write=True)
    return _panel(request, access, _job_of(request, access, job_id))
