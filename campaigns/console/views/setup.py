"""Campaign setup from the browser: `/campaigns/new/`, the Settings tab, archive, delete
and duplicate (issue 24). Writes are the owner's and staff's (`experiment_for(write=True)`:
a player gets 403, an outsider 404), through the services the API calls."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from campaigns.console import access as console_access
from campaigns.console.setup_forms import CampaignForm, ConfirmNameForm, attach_setup_errors
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.models import Experiment
from campaigns.services.experiments import (
    experiment_create,
    experiment_delete,
    experiment_duplicate,
    experiment_update,
)

NEW_TEMPLATE = "campaigns/console/campaign_new.html"
SETTINGS_TEMPLATE = "campaigns/console/settings.html"
DELETE_TEMPLATE = "campaigns/console/campaign_delete.html"


@login_required
@require_http_methods(["GET", "POST"])
def campaign_new(request):
    """A new campaign (a draft the user owns); then its cast page."""
    if request.method == "GET":
        form = CampaignForm(initial=CampaignForm.initial_for(None))
        return page(request, NEW_TEMPLATE, {"form": form}, partial="form")
    form = CampaignForm(request.POST)
    experiment = None
    if form.is_valid():
        try:
            experiment = experiment_create(
                owner=request.user, config=form.config({}), **form.experiment_fields()
            )
        except ValidationError as exc:
            attach_setup_errors(form, exc)
    if experiment is None:
        return page(request, NEW_TEMPLATE, {"form": form}, partial="form", status=INVALID)
    return redirect("console:cast", pk=experiment.pk)


def _settings_context(access, form, *, saved=False):
    ctx = campaign_context(access, access.viewer, active="console:settings")
    ctx.update({"form": form, "saved": saved})
    return ctx


@login_required
@require_http_methods(["GET", "POST"])
def campaign_settings(request, pk):
    """The Settings tab: name, hook, rules and the config a DM sets."""
    access = console_access.experiment_for(request, pk, write=True)
    experiment = access.experiment
    if request.method == "GET":
        form = CampaignForm(initial=CampaignForm.initial_for(experiment))
        return page(request, SETTINGS_TEMPLATE, _settings_context(access, form), partial="form")
    form = CampaignForm(request.POST)
    saved = False
    if form.is_valid():
        try:
            experiment_update(
                experiment=experiment,
                config=form.config(experiment.config),
                **form.experiment_fields(),
            )
            saved = True
        except ValidationError as exc:
            attach_setup_errors(form, exc)
    if not saved:
        experiment.refresh_from_db()  # nothing was stored: the header shows what is
        ctx = _settings_context(access, form)
        return page(request, SETTINGS_TEMPLATE, ctx, partial="form", status=INVALID)
    if not request.htmx:
        return redirect("console:settings", pk=experiment.pk)
    form = CampaignForm(initial=CampaignForm.initial_for(experiment))
    return page(
        request, SETTINGS_TEMPLATE, _settings_context(access, form, saved=True), partial="form"
    )


@login_required
@require_POST
def campaign_archive(request, pk):
    """Archive (hidden under "Archived" on the dashboard) or bring it back as a draft."""
    access = console_access.experiment_for(request, pk, write=True)
    archived = access.experiment.status == Experiment.Status.ARCHIVED
    status = Experiment.Status.DRAFT if archived else Experiment.Status.ARCHIVED
    experiment_update(experiment=access.experiment, status=status)
    return redirect("console:settings", pk=access.experiment.pk)


@login_required
@require_http_methods(["GET", "POST"])
def campaign_delete(request, pk):
    """GET: what deleting takes with it, and a box for the campaign's name. POST: delete."""
    access = console_access.experiment_for(request, pk, write=True)
    experiment = access.experiment
    form = ConfirmNameForm(request.POST or None, name=experiment.name)
    if request.method == "POST" and form.is_valid():
        experiment_delete(experiment=experiment)
        return redirect("console:dashboard")
    ctx = campaign_context(access, access.viewer, active="console:settings")
    ctx.update(
        {
            "form": form,
            "turn_count": experiment.turns.count(),
            "participant_count": experiment.participants.count(),
        }
    )
    return page(request, DELETE_TEMPLATE, ctx, status=INVALID if request.method == "POST" else 200)


@login_required
@require_POST
def campaign_duplicate(request, pk):
    """A new draft from this campaign's setup (settings and cast, no turns), owned by the
    user who copies it; then its Settings tab, to rename it."""
    access = console_access.experiment_for(request, pk, write=True)
    copy = experiment_duplicate(source=access.experiment, owner=request.user)
    return redirect("console:settings", pk=copy.pk)
