"""`/campaigns/<id>/whispers/` — one thread per audience, newest activity first."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from campaigns.console import access as console_access
from campaigns.console.forms import WhisperForm, attach_errors
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.models import Turn
from campaigns.reads import numbering, selectors
from campaigns.services.relay import human_turn_create

TEMPLATE = "campaigns/console/whispers.html"
THREAD_TURNS = 30  # the newest whispers of a thread shown; older ones are in the timeline


@dataclass
class Thread:
    audience: tuple[str, ...]
    turns: list = field(default_factory=list)
    count: int = 0
    form: WhisperForm | None = None

    @property
    def key(self) -> str:
        return "-".join(self.audience)

    @property
    def last_seq(self) -> int:
        return self.turns[-1].seq if self.turns else 0


def threads_for(*, experiment, viewer) -> list[Thread]:
    """The whispers the viewer reads, grouped by exact audience (one query)."""
    threads: dict[tuple[str, ...], Thread] = {}
    whispers = (
        selectors.turns_visible_to(experiment=experiment, viewer=viewer)
        .filter(kind=Turn.Kind.WHISPER)
        .only("id", "seq", "round", "speaker", "kind", "content", "visibility", "created_at")
    )
    for turn in whispers:
        audience = tuple(sorted(set(turn.visibility or [])))
        thread = threads.setdefault(audience, Thread(audience=audience))
        thread.count += 1
        thread.turns.append(turn)
        if len(thread.turns) > THREAD_TURNS:
            thread.turns.pop(0)
    numbering.shown_turns(
        experiment=experiment,
        viewer=viewer,
        turns=[turn for thread in threads.values() for turn in thread.turns],
    )
    return sorted(threads.values(), key=lambda t: t.last_seq, reverse=True)


def _speakers(access, viewer, audience=None) -> list[str]:
    """Whom this user may whisper as: editors any role (DM first); a player themselves."""
    if access.can_edit:
        roles = console_access.roles_of(access)
        dm = console_access.acting_role(access)
        ordered = ([dm] if dm else []) + [r for r in roles if r != dm]
        if audience:
            ordered = [r for r in ordered if r in audience] or ordered
        return ordered
    if viewer.omniscient and not viewer.is_dm:
        return []
    return [viewer.role]


def _thread_form(access, viewer, thread, data=None):
    speakers = _speakers(access, viewer, thread.audience)
    if not speakers:
        return None
    initial = {"recipients": [r for r in thread.audience if r != speakers[0]]}
    return WhisperForm(
        data,
        roles=console_access.roles_of(access),
        speakers=speakers,
        initial=initial,
        auto_id=f"t-{thread.key}-%s",
    )


def _context(access, viewer, as_role, *, new_form=None, bound=None):
    threads = threads_for(experiment=access.experiment, viewer=viewer)
    can_post = not as_role
    for thread in threads:
        thread.form = _thread_form(access, viewer, thread) if can_post else None
        if bound is not None and bound[0] == thread.key:
            thread.form = bound[1]
            bound = None
    ctx = campaign_context(access, viewer, as_role=as_role, active="console:whispers")
    speakers = _speakers(access, viewer) if can_post else []
    ctx["threads"] = threads
    ctx["new_form"] = new_form or (
        WhisperForm(
            roles=console_access.roles_of(access),
            speakers=speakers,
            initial={"recipients": console_access.dm_recipients(access)},
        )
        if speakers
        else None
    )
    return ctx


@login_required
@require_GET
def whispers(request, pk):
    access = console_access.experiment_for(request, pk)
    viewer, as_role = console_access.viewer_for(request, access)
    return page(request, TEMPLATE, _context(access, viewer, as_role), partial="threads")


@login_required
@require_POST
def whisper_post(request, pk):
    """A whisper into a thread or a new one; authorised as the API authorises turns."""
    access = console_access.experiment_for(request, pk)
    viewer = access.viewer
    speakers = _speakers(access, viewer)
    if not speakers:
        raise PermissionDenied("You read this campaign; you do not post in it.")
    form = WhisperForm(request.POST, roles=console_access.roles_of(access), speakers=speakers)
    if form.is_valid():
        data = {
            "speaker": form.cleaned_data["speaker"],
            "kind": Turn.Kind.WHISPER,
            "visibility": form.visibility(),
        }
        try:
            console_access.check_turn_post(access, data)
            human_turn_create(
                experiment=access.experiment,
                user=request.user,
                content=form.cleaned_data["content"],
                **data,
            )
        except ValidationError as exc:
            attach_errors(form, exc)
    if form.errors:
        thread = request.POST.get("thread", "")
        bound = (thread, form) if thread else None
        ctx = _context(access, viewer, "", new_form=None if thread else form, bound=bound)
        if (
            bound is not None
            and ctx["new_form"] is not None
            and not any(t.form is form for t in ctx["threads"])
        ):
            ctx["new_form"] = form
        return page(request, TEMPLATE, ctx, partial="threads", status=INVALID)
    if not request.htmx:
        return redirect("console:whispers", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access, viewer, ""), partial="threads")
