"""`/campaigns/<id>/held/` — what the output guard held, for the DM's review.

Each held turn shows the text as the model wrote it with the quoted runs marked, each
quoted source (its excerpt only where the reviewer may read it) with the run marked, and
three actions: publish (the text as it stands in the box), save an edit (stays held),
discard. The DM side only (owner, staff, a user seated as the DM); a player gets a 403
whatever is held. Held turns come from the one selector (`held_turns_visible_to`).
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from campaigns.console import access as console_access
from campaigns.console.forms import HeldEditForm, attach_errors
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.reads import numbering, selectors
from campaigns.services.holds import held_turn_discard, held_turn_edit, held_turn_publish

TEMPLATE = "campaigns/console/held.html"


def _marked(text: str, spans) -> list[tuple[str, bool]]:
    """``text`` cut into (piece, quoted?) pieces by the (start, end) spans (merged)."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for start, end in sorted(spans):
        start = max(start, at)
        if end <= start:
            continue
        if start > at:
            pieces.append((text[at:start], False))
        pieces.append((text[start:end], True))
        at = end
    if at < len(text):
        pieces.append((text[at:], False))
    return pieces


def _review(turn, viewer, form=None):
    hold = turn.open_holds[0] if getattr(turn, "open_holds", None) else None
    quotes = selectors.hold_quotes_shown_to(quotes=hold.quotes if hold else [], viewer=viewer)
    original = hold.original if hold else turn.content
    for quote in quotes:
        if quote["readable"]:
            quote["pieces"] = _marked(
                quote["source"], [(quote["source_start"], quote["source_end"])]
            )
    turn.review = {
        "hold": hold,
        "meant_for": hold.visibility if hold else None,
        "pieces": _marked(original, [(q["start"], q["end"]) for q in quotes]),
        "quotes": quotes,
        "edited": hold is not None and turn.content != hold.original,
        "form": form or HeldEditForm(initial={"content": turn.content}, auto_id=f"h{turn.pk}-%s"),
    }
    return turn


def _reviewer(request, pk):
    access = console_access.experiment_for(request, pk)
    if not console_access.can_review_held(access):
        raise PermissionDenied("Only the DM side reviews held turns.")
    return access


def _context(access, *, turns=None, notice=""):
    ctx = campaign_context(access, access.viewer, active="console:held")
    if turns is None:
        turns = [
            _review(turn, access.viewer)
            for turn in selectors.held_turns_visible_to(
                experiment=access.experiment, viewer=access.viewer
            )
        ]
    # Numbered as the reviewer reads the timeline (a seated DM: positions, not seqs).
    ctx["held"] = numbering.shown_turns(
        experiment=access.experiment, viewer=access.viewer, turns=turns
    )
    ctx["notice"] = notice
    return ctx


@login_required
@require_GET
def held(request, pk):
    access = _reviewer(request, pk)
    return page(request, TEMPLATE, _context(access), partial="held")


def _after(request, access, notice: str):
    if not request.htmx:
        return redirect("console:held", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access, notice=notice), partial="held")


def _shown_seq(access, turn) -> int:
    """The number the reviewer knows this turn by (see `numbering.shown_turns`)."""
    (shown,) = numbering.shown_turns(
        experiment=access.experiment, viewer=access.viewer, turns=[turn]
    )
    return shown.shown_seq


def _invalid(request, access, turn, form):
    turns = [
        _review(t, access.viewer, form=form if t.pk == turn.pk else None)
        for t in selectors.held_turns_visible_to(experiment=access.experiment, viewer=access.viewer)
    ]
    return page(request, TEMPLATE, _context(access, turns=turns), partial="held", status=INVALID)


def _save_text(request, pk, tid, service, done: str):
    """Publish or edit: the text in the box through ``service``; its errors on the form."""
    access = _reviewer(request, pk)
    turn = console_access.get_held_turn_for(access, tid)
    form = HeldEditForm(request.POST, auto_id=f"h{turn.pk}-%s")
    if form.is_valid():
        try:
            service(
                experiment=access.experiment,
                turn=turn,
                user=request.user,
                content=form.cleaned_data["content"],
            )
        except ValidationError as exc:
            attach_errors(form, exc)
    if form.errors:
        return _invalid(request, access, turn, form)
    return _after(request, access, f"#{_shown_seq(access, turn)} {done}")


@login_required
@require_POST
def held_publish(request, pk, tid):
    """Publish the held turn with the text in the box (edited first if it changed)."""
    return _save_text(request, pk, tid, held_turn_publish, "published.")


@login_required
@require_POST
def held_edit(request, pk, tid):
    """Save a correction; the turn stays held."""
    return _save_text(request, pk, tid, held_turn_edit, "edited; still held.")


@login_required
@require_POST
def held_discard(request, pk, tid):
    access = _reviewer(request, pk)
    turn = console_access.get_held_turn_for(access, tid)
    shown = _shown_seq(access, turn)  # read before the discard takes it out of the stream
    held_turn_discard(experiment=access.experiment, turn=turn, user=request.user)
    return _after(request, access, f"#{shown} discarded (its text stays in the admin).")
