"""`/campaigns/<id>/notes/` — GM notes: create, edit and delete in place.

Each swap is one partial: the list (create), one note (show / save), one note's edit
form. Notes are read through the visibility selector like every other turn.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from campaigns.access import parse_id
from campaigns.console import access as console_access
from campaigns.console.forms import NoteEditForm, NoteForm, attach_errors
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.models import Turn, TurnRevision
from campaigns.reads import numbering, selectors
from campaigns.services.notes import note_create, note_delete, note_update

TEMPLATE = "campaigns/console/notes.html"


def _notes(experiment, viewer):
    notes = list(
        selectors.turns_visible_to(experiment=experiment, viewer=viewer)
        .filter(kind=Turn.Kind.GM_NOTE)
        .order_by("-seq")
    )
    revisions: dict[int, list[TurnRevision]] = {}
    for revision in selectors.turn_revisions_visible_to(
        experiment=experiment, viewer=viewer, turn_ids=[n.pk for n in notes]
    ):
        revisions.setdefault(revision.turn_id, []).append(revision)
    for note in notes:
        note.revision_list = revisions.get(note.pk, [])
    return numbering.shown_turns(experiment=experiment, viewer=viewer, turns=notes)


def _note(access, viewer, tid) -> Turn:
    try:
        note_id = parse_id(tid, what="Note")
    except Exception:
        raise Http404("Note not found.") from None
    # ``tid`` is the number the reader was shown (`numbering.shown_turns`): the id for
    # an omniscient reader, else the note's position in the reader's own stream.
    if numbering.numbers_are_positions(viewer):
        note = numbering.turn_at_position(
            experiment=access.experiment, viewer=viewer, position=note_id
        )
    else:
        note = (
            selectors.turns_visible_to(experiment=access.experiment, viewer=viewer)
            .filter(pk=note_id)
            .first()
        )
    if note is None or note.kind != Turn.Kind.GM_NOTE:
        raise Http404("Note not found.")
    note.revision_list = list(
        selectors.turn_revisions_visible_to(
            experiment=access.experiment, viewer=viewer, turn_ids=[note.pk]
        )
    )
    (note,) = numbering.shown_turns(experiment=access.experiment, viewer=viewer, turns=[note])
    return note


def _context(access, viewer, as_role, *, form=None):
    ctx = campaign_context(access, viewer, as_role=as_role, active="console:notes")
    writer = console_access.can_write_notes(access) and not as_role
    ctx["notes"] = _notes(access.experiment, viewer)
    ctx["can_write"] = writer
    ctx["form"] = form or (
        NoteForm(initial={"round": access.experiment.current_round}, moves_clock=access.can_edit)
        if writer
        else None
    )
    return ctx


def _writer(request, pk):
    access = console_access.experiment_for(request, pk)
    if not console_access.can_write_notes(access):
        raise PermissionDenied("Only the DM keeps GM notes.")
    return access


@login_required
@require_http_methods(["GET", "POST"])
def notes(request, pk):
    if request.method == "GET":
        access = console_access.experiment_for(request, pk)
        viewer, as_role = console_access.viewer_for(request, access)
        return page(request, TEMPLATE, _context(access, viewer, as_role), partial="notes")
    access = _writer(request, pk)
    form = NoteForm(request.POST, moves_clock=access.can_edit)
    if form.is_valid():
        round_ = form.cleaned_data.get("round")
        try:
            note_create(
                experiment=access.experiment,
                user=request.user,
                speaker=console_access.acting_role(access) or "",
                round=round_,  # None: the open round
                content=form.cleaned_data["content"],
            )
        except ValidationError as exc:
            attach_errors(form, exc)
    if form.errors:
        ctx = _context(access, access.viewer, "", form=form)
        return page(request, TEMPLATE, ctx, partial="notes", status=INVALID)
    if not request.htmx:
        return redirect("console:notes", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access, access.viewer, ""), partial="notes")


def _note_context(access, note, *, editing=False, form=None):
    ctx = campaign_context(access, access.viewer, active="console:notes")
    ctx["note"] = note
    ctx["can_write"] = True
    ctx["editing"] = editing
    ctx["edit_form"] = form or NoteEditForm(
        initial={"content": note.content}, auto_id=f"n{note.shown_id}-%s"
    )
    return ctx


@login_required
@require_http_methods(["GET", "POST"])
def note(request, pk, tid):
    """GET: one note (cancel an edit). POST: save the edit (old text kept as a revision)."""
    access = _writer(request, pk)
    current = _note(access, access.viewer, tid)
    if request.method == "GET":
        return page(
            request, "campaigns/console/note.html", _note_context(access, current), partial="note"
        )
    form = NoteEditForm(request.POST, auto_id=f"n{current.shown_id}-%s")
    if form.is_valid():
        try:
            note_update(turn=current, user=request.user, content=form.cleaned_data["content"])
        except ValidationError as exc:
            attach_errors(form, exc)
    if form.errors:
        ctx = _note_context(access, current, editing=True, form=form)
        return page(request, "campaigns/console/note.html", ctx, partial="note", status=INVALID)
    if not request.htmx:
        return redirect("console:notes", pk=access.experiment.pk)
    fresh = _note(access, access.viewer, current.shown_id)
    return page(
        request, "campaigns/console/note.html", _note_context(access, fresh), partial="note"
    )


@login_required
@require_GET
def note_edit(request, pk, tid):
    access = _writer(request, pk)
    current = _note(access, access.viewer, tid)
    ctx = _note_context(access, current, editing=True)
    return page(request, "campaigns/console/note.html", ctx, partial="note")


@login_required
@require_POST
def note_remove(request, pk, tid):
    """Delete in place: the row disappears; the text stays as a revision for the admin."""
    access = _writer(request, pk)
    current = _note(access, access.viewer, tid)
    note_delete(turn=current, user=request.user)
    if not request.htmx:
        return redirect("console:notes", pk=access.experiment.pk)
    return HttpResponse(
        f'<p class="notice" role="status">Note #{current.shown_seq} deleted '
        "(kept in the admin).</p>"
    )
