"""Take it home (issue 24, ask 5): export, import, and the session log per audience.

- `/campaigns/<id>/export/` — the transcript JSON, the same bytes as the API's export
  (owner and staff, as the API).
- `/campaigns/import/` — upload a transcript; it is imported in the background
  (`TranscriptUpload`) and `/imports/<uuid>/` shows its progress, then the new campaign
  or the importer's field-named errors.
- `/campaigns/<id>/log/?as=<role>&format=md|html` — the session log as one audience may
  read it: the page (a role picker and a preview), Markdown, or the printable page.
"""

from __future__ import annotations

from dataclasses import replace

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseStopPolling

from babel_site.errors import error_response
from campaigns.console import access as console_access
from campaigns.console.forms import TranscriptUploadForm, attach_errors
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.reads import session_log as logs
from campaigns.services import transcripts
from campaigns.services.transcripts import uploads

LOG_TEMPLATE = "campaigns/console/session_log.html"
IMPORT_TEMPLATE = "campaigns/console/import.html"
PROGRESS_TEMPLATE = "campaigns/console/_import_progress.html"
PREVIEW_ROUNDS = 5


def _field_error(request, exc: ValidationError) -> HttpResponse:
    """A 400 naming the field (``as: …``, ``format: …``), as the API's body does."""
    detail = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
    return error_response(request, 400, detail)


@login_required
@require_GET
def session_log(request, pk):
    access = console_access.experiment_for(request, pk)
    as_role = request.GET.get("as", "").strip()
    raw_format = request.GET.get("format")
    if logs.log_role_refused(viewer=access.viewer, as_role=as_role):
        raise PermissionDenied("You may read only your own role's log.")
    try:
        fmt = logs.clean_format(raw_format) if raw_format is not None else ""
        experiment, reader = access.experiment, access.viewer
        log = logs.session_log_as(experiment=experiment, reader=reader, as_role=as_role)
    except ValidationError as exc:
        return _field_error(request, exc)
    if fmt:
        body, content_type, filename = logs.session_log_render(log, fmt)
        response = HttpResponse(body, content_type=content_type)
        disposition = "attachment" if fmt == "md" else "inline"
        response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
        return response
    ctx = campaign_context(access, access.viewer, active="console:log")
    ctx.update(
        # The page previews the latest rounds; the downloads hold them all.
        log=replace(log, rounds=log.rounds[-PREVIEW_ROUNDS:]),
        rounds_left_out=max(0, len(log.rounds) - PREVIEW_ROUNDS),
        log_role=as_role if access.viewer.omniscient else "",
        roles=list(access.experiment.participants.order_by("order", "id")),
        may_choose=access.viewer.omniscient,
    )
    return page(request, LOG_TEMPLATE, ctx)


@login_required
@require_GET
def export(request, pk):
    """The transcript JSON: exactly the API export's bytes and headers."""
    access = console_access.experiment_for(request, pk, write=True)
    body, filename = transcripts.export_file(experiment=access.experiment)
    response = HttpResponse(body, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_http_methods(["GET", "POST"])
def import_page(request):
    bound = request.method == "POST"
    form = TranscriptUploadForm(request.POST, request.FILES) if bound else TranscriptUploadForm()
    ctx = {"form": form, "limit": uploads.upload_limit(), "upload": None}
    if request.method == "POST":
        if form.is_valid():
            file = form.cleaned_data["transcript"]
            try:
                if file.size > uploads.upload_limit():  # before reading it into memory
                    raise ValidationError({"transcript": [uploads.too_large_message(file.size)]})
                upload = uploads.transcript_upload_start(
                    user=request.user, filename=file.name, data=file.read()
                )
            except ValidationError as exc:
                attach_errors(form, exc)
            else:
                if not request.htmx:
                    return redirect("console:import_status", uid=upload.pk)
                upload.refresh_from_db()  # without a broker it has already run
                ctx.update(upload=upload, form=TranscriptUploadForm())
                return page(request, IMPORT_TEMPLATE, ctx, partial="upload")
        return page(request, IMPORT_TEMPLATE, ctx, partial="upload", status=INVALID)
    return page(request, IMPORT_TEMPLATE, ctx)


@login_required
@require_GET
def import_status(request, uid):
    """An upload's progress; 286 (htmx: stop polling) once it has ended."""
    upload = console_access.get_upload_for(request, uid)
    if not request.htmx:
        ctx = {"form": TranscriptUploadForm(), "limit": uploads.upload_limit(), "upload": upload}
        return page(request, IMPORT_TEMPLATE, ctx)
    status = 200 if upload.running else HttpResponseStopPolling.status_code
    return render(request, PROGRESS_TEMPLATE, {"upload": upload}, status=status)
