"""`/campaigns/<id>/` — the turn timeline, view-as, the composer, and the job buttons."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import trigger_client_event

from campaigns.console import access as console_access
from campaigns.console.forms import (
    MemoryForm,
    RevealForm,
    TurnForm,
    attach_errors,
    content_error,
)
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.console.views.run import run_panel_context
from campaigns.models import Job, Turn
from campaigns.reads import numbering, selectors
from campaigns.services import relay
from campaigns.services.memory.retrieval import RETRIEVAL_COMMANDS, retrieval_run
from campaigns.services.relay import human_turn_create
from campaigns.services.reveals import turn_reveal
from campaigns.services.turn_fixes import regenerable_ids
from context_engine.commands import retrieval_line
from context_engine.visibility import parse_stored_visibility

PAGE_SIZE = 50
TEMPLATE = "campaigns/console/campaign.html"
JOB_DONE = "job-done"
TURNS_CHANGED = "turns-changed"
ROUND_CHANGED = "round-changed"


def _int(value: str | None) -> int | None:
    if value is None or not value.strip().isdigit() or len(value.strip()) > 9:
        return None
    return int(value)


@dataclass(frozen=True)
class WhisperStub:
    """A whisper the viewer may not read, shown only as "X whispered to Y" when the
    campaign sets `show_whisper_existence` (SPEC §4): never its content, tags or hinge."""

    seq: int
    round: int
    speaker: str
    recipients: tuple[str, ...]
    is_stub = True


def _whisper_stubs(*, experiment, viewer, filters, low: int, high: int | None) -> list:
    """The stubs between two seqs of the page, under the page's round/speaker filters."""
    if filters.get("kind") not in (None, Turn.Kind.WHISPER):
        return []
    hidden = selectors.whisper_stubs_shown_to(experiment=experiment, viewer=viewer)
    hidden = hidden.filter(seq__gt=low)
    if high is not None:
        hidden = hidden.filter(seq__lt=high)
    if "round" in filters:
        hidden = hidden.filter(round=filters["round"])
    if "speaker" in filters:
        hidden = hidden.filter(speaker=filters["speaker"])
    rows = list(
        hidden.order_by("seq").values_list("seq", "round", "speaker", "visibility")[: PAGE_SIZE * 2]
    )
    if not rows:
        return []
    dms = selectors.dm_roles(experiment=experiment)
    return [
        WhisperStub(
            seq=seq,
            round=round_,
            speaker=speaker,
            recipients=tuple(
                r for r in parse_stored_visibility(visibility, dms) or () if r != speaker
            ),
        )
        for seq, round_, speaker, visibility in rows
    ]


def timeline(*, experiment, viewer, params) -> dict:
    """The newest PAGE_SIZE turns the viewer reads (filtered), shown oldest first.

    ``before`` pages back by seq: one query for the page, one probe for "is there more".
    With `show_whisper_existence`, whispers the viewer may not read between those turns
    appear as content-free stubs (one more query).
    """
    turns = selectors.turns_visible_to(experiment=experiment, viewer=viewer)
    filters = {}
    raw_round = (params.get("round") or "").strip()
    round_ = _int(raw_round)
    filter_error = ""
    if raw_round and round_ is None:
        filter_error = (
            f"Round “{raw_round[:20]}” is not a round number (0 = setup); showing every round."
        )
    if round_ is not None:
        turns = turns.filter(round=round_)
        filters["round"] = round_
    kind = params.get("kind", "")
    if kind in Turn.Kind.values:
        turns = turns.filter(kind=kind)
        filters["kind"] = kind
    speaker = params.get("speaker", "")[:64]
    if speaker:
        turns = turns.filter(speaker=speaker)
        filters["speaker"] = speaker
    # ``before`` is a number the reader was shown: for one who does not read everything,
    # a position in their own stream (`numbering.turn_positions`), turned back into a seq.
    before = _int(params.get("before"))
    if before and numbering.numbers_are_positions(viewer):
        at = numbering.turn_at_position(experiment=experiment, viewer=viewer, position=before)
        before = at.seq if at is not None else None
    page_turns = turns.filter(seq__lt=before) if before else turns
    rows = list(page_turns.order_by("-seq")[: PAGE_SIZE + 1])
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    rows.reverse()
    low = rows[0].seq if (rows and more) else 0
    stubs = _whisper_stubs(
        experiment=experiment, viewer=viewer, filters=filters, low=low, high=before
    )
    items = sorted([*rows, *stubs], key=lambda item: item.seq) if stubs else rows
    rows = numbering.shown_turns(experiment=experiment, viewer=viewer, turns=rows)
    return {
        "turns": items,
        "more": more,
        "earliest_seq": rows[0].shown_seq if rows else None,
        "filters": filters,
        "filter_error": filter_error,
        "kinds": Turn.Kind.choices,
    }


def _composer(access, viewer, data=None):
    """The composer for whoever is reading: None when they may not post (a judge, or an
    owner viewing as someone)."""
    if access.can_edit:
        speaker = console_access.acting_role(access)
        is_player = False
    elif viewer.omniscient and not viewer.is_dm:
        return None
    else:
        speaker = viewer.role
        is_player = not viewer.is_dm
    if speaker is None:
        return None
    roles = console_access.roles_of(access)
    # No round by default: a post goes into the round open when it is stored, so a page
    # left open across "Run a round" never writes into a closed round.
    initial = {"recipients": console_access.dm_recipients(access)}
    form = TurnForm(
        data,
        speaker=speaker,
        roles=roles,
        is_player=is_player,
        moves_clock=access.can_edit,  # `turns.may_move_clock`: owner and staff
        initial=initial,
    )
    if access.can_edit and "round" in form.fields:  # console.js keeps it in step
        form.fields["round"].help_text = format_html(
            'Blank: the open round, now <strong id="composer-round">{}</strong>.',
            access.experiment.current_round,
        )
    return form


def _waiting(request, access, form) -> dict:
    """Who the round waits for; ``your_turn`` when it is the reader, posting as that role."""
    waiting = relay.waiting_for(access.experiment)
    your_turn = False
    if waiting and form is not None and form.speaker == waiting["role"]:
        seat = access.experiment.participants.filter(role=waiting["role"]).first()
        your_turn = seat is not None and relay.plays_seat(request.user, seat, access.experiment)
    return {"waiting": waiting, "your_turn": your_turn}


def _memory_form(access, as_role: str, data=None) -> MemoryForm | None:
    """While an owner views as a role, the composer only looks things up for that role."""
    if not (access.can_edit and as_role):
        return None
    return MemoryForm(data, initial={"as_role": as_role})


def _context(request, access, viewer, as_role, *, form=None, params=None, memory_form=None):
    ctx = campaign_context(access, viewer, as_role=as_role, active="console:campaign")
    ctx.update(timeline(experiment=access.experiment, viewer=viewer, params=params or request.GET))
    ctx["form"] = form if form is not None else _composer(access, viewer)
    ctx["memory_form"] = memory_form or _memory_form(access, as_role)
    ctx["lookup_role"] = as_role or (ctx["form"].speaker if ctx["form"] else "")
    ctx["run"] = run_panel_context(access.experiment) if access.can_edit else None
    ctx.update(_status(request, access, viewer, ctx["form"]))
    ctx["speakers"] = console_access.roles_of(access)
    ctx["can_fix"] = console_access.can_fix_turns(access) and not as_role
    _fix_marks(access, viewer, [t for t in ctx["turns"] if not getattr(t, "is_stub", False)], ctx)
    query = dict(ctx["filters"])
    if as_role:
        query["as"] = as_role
    ctx["self_url"] = reverse("console:campaign", args=[access.experiment.pk])
    ctx["query"] = urlencode(query)
    ctx.update(_live(request, access, as_role))
    return ctx


def _fix_marks(access, viewer, rows, ctx) -> None:
    """Each row's earlier texts this viewer reads (`turn_revisions_visible_to`: one query)
    and, for the DM side, whether a model's step wrote it (one query)."""
    revisions: dict[int, list] = {}
    for revision in selectors.turn_revisions_visible_to(
        experiment=access.experiment, viewer=viewer, turn_ids=[t.pk for t in rows]
    ):
        revisions.setdefault(revision.turn_id, []).append(revision)
    models = regenerable_ids(experiment=access.experiment, turns=rows) if ctx["can_fix"] else ()
    for turn in rows:
        turn.revision_list = revisions.get(turn.pk, [])
        turn.regenerable = turn.pk in models


def _live(request, access, as_role: str) -> dict:
    """The page's live stream (static/js/live.js): the campaign's SSE endpoint, asked with
    the same ``as`` as the page, and whose inspector a draft may link to (the roles this
    user may inspect, as the inspector itself decides).

    Only where the site is served by ASGI: under WSGI (``runserver``, a sync gunicorn, the
    tests' live server) an open stream would hold a server thread for its whole life, so
    those pages keep the round bar's poll alone."""
    if not isinstance(request, ASGIRequest):
        return {"live_url": ""}
    path = f"/campaigns/{access.experiment.pk}/live/"
    try:
        resolve(path)
    except Resolver404:
        return {"live_url": ""}
    inspect_roles = []
    for role in console_access.roles_of(access):
        try:
            console_access.check_context_role(access, role)
        except Http404:
            continue
        inspect_roles.append(role)
    return {
        "live_url": path + (f"?{urlencode({'as': as_role})}" if as_role else ""),
        "inspect_roles": ",".join(inspect_roles),
        "kind_labels": json.dumps({value: str(label) for value, label in Turn.Kind.choices}),
    }


def _status(request, access, viewer, form) -> dict:
    """``waiting``, ``your_turn`` and ``round_status``: what the round bar shows."""
    ctx = _waiting(request, access, form)
    ctx["round_status"] = _round_status(access, viewer, ctx)
    return ctx


def _round_status(access, viewer, ctx) -> dict:
    """What the page's round-status poller compares: the active round job, whom it waits
    for, whether that is this reader, and the newest turn this viewer reads (a seq from
    the visibility selector, so the key says nothing of turns the viewer cannot read)."""
    job = (
        Job.objects.filter(
            experiment=access.experiment, kind=Job.Kind.ROUND, status__in=relay.ACTIVE
        )
        .only("id", "status")
        .order_by("-created_at")
        .first()
    )
    newest = (
        selectors.turns_visible_to(experiment=access.experiment, viewer=viewer)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    if newest is not None:  # as the reader is shown it: a global seq counts hidden turns
        newest = numbering.turn_positions(
            experiment=access.experiment, viewer=viewer, seqs=[newest]
        )[newest]
    waiting = ctx.get("waiting") or {}
    key = "|".join(
        str(part)
        for part in (
            job.pk if job else "",
            job.status if job else "",
            waiting.get("role", ""),
            int(bool(ctx.get("your_turn"))),
            newest or 0,
        )
    )
    return {
        "active": job is not None,
        "waiting": waiting,
        "your_turn": bool(ctx.get("your_turn")),
        "key": key,
    }


@login_required
@require_GET
def campaign(request, pk):
    access = console_access.experiment_for(request, pk)
    viewer, as_role = console_access.viewer_for(request, access)
    part = request.GET.get("part")
    if part == "round_status" and request.htmx:
        # The poller (every few seconds per open page) renders the round bar alone, and
        # the header's round number out of band (the clock moves without a reload): the
        # experiment row was read for this request, and nothing here moves the clock.
        ctx = {
            "as_role": as_role,
            "self_url": reverse("console:campaign", args=[access.experiment.pk]),
            "round_now": access.experiment.current_round,
            **_status(request, access, viewer, _composer(access, viewer)),
        }
    else:
        ctx = _context(request, access, viewer, as_role)
    if part in ("composer", "round_status"):
        partial = part
    else:
        partial = "earlier" if request.GET.get("before") else "timeline"
    status = 400 if ctx.get("filter_error") else 200  # ?round=abc: said, not ignored
    response = page(request, TEMPLATE, ctx, partial=partial, status=status)
    if part == "round_status" and request.htmx:
        seen = request.GET.get("seen", "")
        now = ctx["round_status"]["key"]
        if seen and seen != now:
            # New turns or a new round state: the timeline refreshes itself; when it
            # became (or stopped being) this reader's turn, the composer does too.
            events = [TURNS_CHANGED]
            if seen.split("|")[3:4] != now.split("|")[3:4]:
                events.append(ROUND_CHANGED)
            response["HX-Trigger"] = ", ".join(events)
    return response


@login_required
@require_POST
def turn_post(request, pk):
    """The composer's post: authorised like the API (`check_turn_post`), stored by the
    turn service; a bad field re-renders the composer with its error."""
    access = console_access.experiment_for(request, pk)
    viewer = access.viewer
    form = _composer(access, viewer, request.POST)
    if form is None:
        raise PermissionDenied("You read this campaign; you do not post in it.")
    line = retrieval_line(request.POST.get("content", ""))
    if line is not None:
        return _lookup(request, access, form, line)
    if form.is_valid():
        data = {
            "speaker": form.speaker,
            "kind": form.cleaned_data["kind"],
            "visibility": form.visibility(),
        }
        try:
            console_access.check_turn_post(access, data)
            human_turn_create(
                experiment=access.experiment,
                user=request.user,
                round=form.cleaned_data.get("round"),  # None: the open round
                content=form.cleaned_data["content"],
                hinge=bool(form.cleaned_data.get("hinge")),
                **data,
            )
        except ValidationError as exc:
            attach_errors(form, exc)
    if form.errors:
        ctx = _context(request, access, viewer, "", form=form)
        return page(request, TEMPLATE, ctx, partial="composer", status=INVALID)
    if not request.htmx:
        return redirect("console:campaign", pk=access.experiment.pk)
    ctx = _context(request, access, viewer, "")
    response = page(request, TEMPLATE, ctx, partial="composer")
    return trigger_client_event(response, TURNS_CHANGED)


def _lookup_viewer(request, access, form):
    """Whom a lookup runs as: an owner as the role viewed (``as_role``) or the role they
    post as; anyone else only as themselves (their own viewer, whatever they send)."""
    if not access.can_edit:
        return access.viewer, ""
    as_role = request.POST.get("as_role", "").strip()
    try:
        viewer = selectors.viewer_for_role(
            experiment=access.experiment, role=as_role or form.speaker
        )
    except selectors.UnknownRole:
        raise Http404("No such role in this campaign.") from None
    return viewer, as_role


def _lookup(request, access, form, line):
    """``/search``, ``/lore`` or ``/timeline`` typed into the composer: answered at once
    with the snippets pinned for that role's next pack (only what the role may read)."""
    viewer, as_role = _lookup_viewer(request, access, form)
    memory_form = _memory_form(access, as_role, request.POST)
    shown = memory_form or form
    result = None
    if not line.known:
        commands = ", ".join(f"/{name}" for name in RETRIEVAL_COMMANDS)
        content_error(shown, f"Unknown command /{line.command}; memory lookups are {commands}.")
    else:
        try:
            result = retrieval_run(
                experiment=access.experiment,
                viewer=viewer,
                command=line.command,
                query=line.query,
                user=request.user,
            )
        except ValidationError as exc:
            content_error(shown, exc.messages)
    read_as = access.viewer if not as_role else viewer
    ctx = _context(
        request,
        access,
        read_as,
        as_role,
        form=None if memory_form or result else form,
        memory_form=None if result else memory_form,
    )
    ctx["lookup"] = result
    ctx["lookup_role"] = viewer.role
    status = 200 if result is not None else INVALID
    return page(request, TEMPLATE, ctx, partial="composer", status=status)


@login_required
@require_POST
def turn_reveal_post(request, pk, tid):
    """The timeline's "Reveal" action (owner and staff): widen one turn's audience through
    the reveal service; answers the turn's row, re-rendered (with the field's error)."""
    access = console_access.experiment_for(request, pk, write=True)
    turn = Turn.objects.filter(experiment=access.experiment, pk=_int(tid) or 0).first()
    if turn is None:
        raise Http404("No such turn in this campaign.")
    roles = console_access.roles_of(access)
    # Read as the reveal service reads it (corrupt data: DM-only).
    stored = parse_stored_visibility(
        turn.visibility, selectors.dm_roles(experiment=access.experiment)
    )
    audience = list(stored or ())
    form = RevealForm(request.POST, audience=audience, roles=roles)
    if form.is_valid():
        try:
            turn_reveal(
                experiment=access.experiment,
                turn=turn,
                visibility=form.visibility(),
                user=request.user,
            )
        except ValidationError as exc:
            attach_errors(form, exc)
    if not form.errors and not request.htmx:
        return redirect("console:campaign", pk=access.experiment.pk)
    turn.refresh_from_db()
    turn.shown_seq = turn.seq  # an editor reads everything: the real seq
    ctx = {"turn": turn, "can_edit": True, "speakers": roles, "experiment": access.experiment}
    if form.errors:
        ctx["reveal_form"] = form
    response = render(
        request, "campaigns/console/_turn_row.html", ctx, status=INVALID if form.errors else 200
    )
    return response if form.errors else trigger_client_event(response, TURNS_CHANGED)
