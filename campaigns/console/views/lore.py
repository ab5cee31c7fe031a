"""`/campaigns/<id>/lore/` — the World Bible editor.

Reads go through `lore_visible_to` (and each entry's source turns through
`turns_visible_to`); writes are the owner's and staff's, through the lore services, so
each change is a revision.
"""

from __future__ import annotations

import difflib

from django.core.exceptions import ValidationError
from django.db.models import Count, Prefetch, Q
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget

from campaigns.console import access as console_access
from campaigns.console.forms import (
    LoreActionForm,
    LoreBulkForm,
    LoreCreateForm,
    LoreMergeForm,
    attach_errors,
)
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.models import LoreEntry, LoreRevision
from campaigns.reads import numbering, selectors
from campaigns.services.lore import lore_create, lore_update
from campaigns.services.lore_editor import lore_bulk_status, lore_merge

TEMPLATE = "campaigns/console/lore.html"
TABS = (
    ("proposed", "Proposed"),
    ("confirmed", "Confirmed"),
    ("rejected", "Rejected"),
    ("invalidated", "Invalidated"),
)
SORTS = (("mentions", "Most mentioned"), ("recent", "Last seen round"), ("term", "Term"))
PAGE_LIMIT = 200


# Entries the DM rejected are the DM side's business: a player's tabs leave them out.
PLAYER_TABS = tuple(item for item in TABS if item[0] != "rejected")
# Actions after which the entry belongs in another tab: the list is re-rendered in place.
MOVING_ACTIONS = ("confirm", "reject", "invalidate", "revalidate")


def _tabs(editor: bool):
    return TABS if editor else PLAYER_TABS


def _counts(experiment, viewer) -> dict[str, int]:
    """How many entries each tab holds for this viewer (one query)."""
    valid = Q(invalid_from_round__isnull=True)
    return selectors.lore_visible_to(experiment=experiment, viewer=viewer).aggregate(
        proposed=Count("id", filter=valid & Q(status=LoreEntry.Status.PROPOSED)),
        confirmed=Count("id", filter=valid & Q(status=LoreEntry.Status.CONFIRMED)),
        rejected=Count("id", filter=valid & Q(status=LoreEntry.Status.REJECTED)),
        invalidated=Count("id", filter=~valid),
    )


def _entries(experiment, viewer, params, tabs=TABS):
    tab = params.get("tab", "proposed")
    if tab not in dict(tabs):
        tab = "proposed"
    entries = selectors.lore_visible_to(experiment=experiment, viewer=viewer)
    if tab == "invalidated":
        entries = entries.filter(invalid_from_round__isnull=False)
    else:
        entries = entries.filter(status=tab, invalid_from_round__isnull=True)
    q = params.get("q", "").strip()[:200]
    if q:
        entries = entries.filter(Q(term__icontains=q) | Q(definition__icontains=q))
    sort = params.get("sort", "mentions")
    order = {
        "mentions": ("-mention_count", "term"),
        "recent": ("-last_seen_round", "term"),
        "term": ("term", "id"),
    }.get(sort, ("-mention_count", "term"))
    sources = selectors.turns_visible_to(experiment=experiment, viewer=viewer).only(
        "id", "seq", "round", "experiment_id"
    )
    entries = entries.order_by(*order).prefetch_related(
        Prefetch("source_turns", queryset=sources, to_attr="visible_sources")
    )
    entries = numbering.shown_lore(
        experiment=experiment, viewer=viewer, entries=entries[:PAGE_LIMIT]
    )
    return entries, {"tab": tab, "q": q, "sort": sort}


def _context(
    access,
    viewer,
    as_role,
    params,
    *,
    create_form=None,
    merge_form=None,
    bulk_form=None,
    notice="",
    reject_instead=None,
):
    ctx = campaign_context(access, viewer, as_role=as_role, active="console:lore")
    editor = access.can_edit and not as_role
    tabs = _tabs(access.can_edit)
    entries, state = _entries(access.experiment, viewer, params, tabs)
    ctx.update(state)
    counts = _counts(access.experiment, viewer)
    ctx["entries"] = entries
    ctx["tabs"] = [(value, label, counts.get(value, 0)) for value, label in tabs]
    ctx["sorts"] = SORTS
    ctx["editor"] = editor
    ctx["notice"] = notice
    ctx["reject_instead"] = reject_instead
    if editor:
        roles = console_access.roles_of(access)
        all_entries = list(
            selectors.lore_visible_to(experiment=access.experiment, viewer=viewer)
            .order_by("term", "id")
            .only("id", "term", "status", "audience")[:1000]
        )
        ctx["create_form"] = create_form or LoreCreateForm(roles=roles)
        ctx["merge_form"] = merge_form or LoreMergeForm(entries=all_entries)
        ctx["bulk_form"] = bulk_form
    return ctx


@login_required
@require_http_methods(["GET", "POST"])
def lore(request, pk):
    """GET: the editor (htmx: the entry list). POST: create an entry."""
    if request.method == "GET":
        access = console_access.experiment_for(request, pk)
        viewer, as_role = console_access.viewer_for(request, access)
        ctx = _context(access, viewer, as_role, request.GET)
        return page(request, TEMPLATE, ctx, partial="entries")
    access = console_access.experiment_for(request, pk, write=True)
    form = LoreCreateForm(request.POST, roles=console_access.roles_of(access))
    created = None
    if form.is_valid():
        try:
            created = lore_create(
                experiment=access.experiment,
                user=request.user,
                term=form.cleaned_data["term"],
                category=form.cleaned_data["category"],
                definition=form.cleaned_data["definition"],
                audience=form.cleaned_data["audience"] or None,
            )
        except ValidationError as exc:
            attach_errors(form, exc)
    params = _list_params(request.POST)  # the list stays on the tab the DM is reading
    if form.errors:
        ctx = _context(access, access.viewer, "", params, create_form=form)
        return page(request, TEMPLATE, ctx, partial="editor", status=INVALID)
    if not request.htmx:
        return redirect(f"{request.path}?tab={created.status}")
    notice = f"Created “{created.term}” ({created.get_status_display().lower()})."
    ctx = _context(access, access.viewer, "", params, notice=notice)
    return page(request, TEMPLATE, ctx, partial="editor")


def _list_params(data) -> dict:
    """The list a form was posted from (its tab, search and sort), to re-render it."""
    return {
        "tab": data.get("tab", "proposed"),
        "q": data.get("q", ""),
        "sort": data.get("sort", "mentions"),
    }


def _entry_context(access, entry, *, form=None):
    ctx = campaign_context(access, access.viewer, active="console:lore")
    sources = selectors.turns_visible_to(experiment=access.experiment, viewer=access.viewer)
    entry.visible_sources = list(sources.filter(lore_entries=entry).only("id", "seq", "round"))
    numbering.shown_lore(experiment=access.experiment, viewer=access.viewer, entries=[entry])
    ctx["entry"] = entry
    ctx["editor"] = access.can_edit
    ctx["entry_form"] = form
    return ctx


@login_required
@require_POST
def entry_action(request, pk, lid):
    """Correct, confirm, reject, lock, unlock, invalidate or revalidate one entry."""
    access = console_access.experiment_for(request, pk, write=True)
    entry = console_access.get_lore_for(access, access.viewer, lid)
    form = LoreActionForm(request.POST)
    if form.is_valid():
        action = form.cleaned_data["action"]
        changes = {
            "correct": {"definition": form.cleaned_data["definition"]},
            "confirm": {"status": LoreEntry.Status.CONFIRMED},
            "reject": {"status": LoreEntry.Status.REJECTED},
            "lock": {"locked": True},
            "unlock": {"locked": False},
            "invalidate": {"invalid_from_round": form.cleaned_data["invalid_from_round"]},
            "revalidate": {"invalid_from_round": None},
        }[action]
        try:
            entry = lore_update(entry=entry, user=request.user, **changes)
        except ValidationError as exc:
            attach_errors(form, exc)
    if form.errors:
        ctx = _entry_context(access, entry, form=form)
        return page(
            request, "campaigns/console/lore_entry.html", ctx, partial="entry", status=INVALID
        )
    if not request.htmx:
        return redirect("console:lore", pk=access.experiment.pk)
    if form.cleaned_data["action"] in MOVING_ACTIONS and "tab" in request.POST:
        # It now belongs in another tab: the list and its counts are re-rendered in place.
        notice = f"“{entry.term}”: {entry.get_status_display().lower()}."
        ctx = _context(access, access.viewer, "", _list_params(request.POST), notice=notice)
        response = page(request, TEMPLATE, ctx, partial="editor")
        return reswap(retarget(response, "#lore-editor"), "outerHTML")
    ctx = _entry_context(access, entry)
    return page(request, "campaigns/console/lore_entry.html", ctx, partial="entry")


def revision_rows(entry) -> list[dict]:
    """Each revision with a word diff of its definition change (if any)."""
    rows = []
    for revision in LoreRevision.objects.filter(entry=entry).order_by("-id"):
        changes = revision.changes or {}
        diff = None
        if "definition" in changes:
            old, new = changes["definition"]
            diff = list(_word_diff(old or "", new or ""))
        other = {k: v for k, v in changes.items() if k != "definition"}
        rows.append({"revision": revision, "diff": diff, "other": other})
    return rows


def _word_diff(old: str, new: str):
    """(op, text) pieces: ' ' kept, '-' removed, '+' added."""
    a, b = old.split(), new.split()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            yield " ", " ".join(a[i1:i2])
            continue
        if i2 > i1:
            yield "-", " ".join(a[i1:i2])
        if j2 > j1:
            yield "+", " ".join(b[j1:j2])


@login_required
@require_GET
def entry_history(request, pk, lid):
    access = console_access.experiment_for(request, pk)
    viewer, as_role = console_access.viewer_for(request, access)
    entry = console_access.get_lore_for(access, viewer, lid)
    ctx = campaign_context(access, viewer, as_role=as_role, active="console:lore")
    numbering.shown_lore(experiment=access.experiment, viewer=viewer, entries=[entry])
    ctx["entry"] = entry
    ctx["revisions"] = revision_rows(entry)
    return page(request, "campaigns/console/lore_history.html", ctx, partial="history")


def _visible_entries(access, ids):
    return list(
        selectors.lore_visible_to(experiment=access.experiment, viewer=access.viewer).filter(
            pk__in=ids
        )
    )


@login_required
@require_POST
def merge(request, pk):
    access = console_access.experiment_for(request, pk, write=True)
    choices = list(
        selectors.lore_visible_to(experiment=access.experiment, viewer=access.viewer).only(
            "id", "term", "status", "audience"
        )[:1000]
    )
    form = LoreMergeForm(request.POST, entries=choices)
    reject_instead = None
    if form.is_valid():
        entries = {
            e.pk: e
            for e in _visible_entries(
                access, [form.cleaned_data["keep"], form.cleaned_data["merge"]]
            )
        }
        try:
            lore_merge(
                keep=entries[form.cleaned_data["keep"]],
                merge=entries[form.cleaned_data["merge"]],
                user=request.user,
            )
        except ValidationError as exc:
            keep, other = entries[form.cleaned_data["keep"]], entries[form.cleaned_data["merge"]]
            attach_errors(form, exc)
            if keep.audience_key != other.audience_key:
                # The way forward: keep both (each audience reads its own), or reject one.
                reject_instead = other
    params = _list_params(request.POST)
    if form.errors:
        ctx = _context(
            access, access.viewer, "", params, merge_form=form, reject_instead=reject_instead
        )
        return page(request, TEMPLATE, ctx, partial="editor", status=INVALID)
    if not request.htmx:
        return redirect("console:lore", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(access, access.viewer, "", params), partial="editor")


@login_required
@require_POST
def bulk(request, pk):
    """Confirm or reject every ticked entry at once (all or nothing)."""
    access = console_access.experiment_for(request, pk, write=True)
    raw_ids = [i for i in request.POST.getlist("ids") if i.isdigit() and len(i) < 19]
    candidates = _visible_entries(access, raw_ids)
    form = LoreBulkForm(request.POST, entries=candidates)
    if form.is_valid():
        try:
            lore_bulk_status(
                entries=[e for e in candidates if e.pk in set(form.cleaned_data["ids"])],
                user=request.user,
                action=form.cleaned_data["action"],
            )
        except ValidationError as exc:
            attach_errors(form, exc)
    params = {
        "tab": request.POST.get("tab", "proposed"),
        "q": request.POST.get("q", ""),
        "sort": request.POST.get("sort", "mentions"),
    }
    if form.errors:
        ctx = _context(access, access.viewer, "", params, bulk_form=form)
        return page(request, TEMPLATE, ctx, partial="editor", status=INVALID)
    if not request.htmx:
        return redirect(f"{request.path.rsplit('bulk/', 1)[0]}?tab={params['tab']}")
    return page(request, TEMPLATE, _context(access, access.viewer, "", params), partial="editor")
