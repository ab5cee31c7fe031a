"""`/campaigns/<id>/memory/` — digests per audience with versions, diff, restore; job history."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from campaigns.access import parse_id
from campaigns.console import access as console_access
from campaigns.console.views.base import INVALID, campaign_context, login_required, page
from campaigns.models import Job, Summary
from campaigns.reads import numbering, selectors
from campaigns.services.memory import summary_restore

TEMPLATE = "campaigns/console/memory.html"
JOB_HISTORY = 30


@dataclass
class Line:
    kind: str
    audience: list | None
    key: str
    versions: list = field(default_factory=list)


def digest_lines(experiment, viewer) -> list[Line]:
    """Every digest/strategic line the viewer may read, newest version first (one query)."""
    lines: dict[tuple[str, str], Line] = {}
    summaries = (
        selectors.summaries_visible_to(experiment=experiment, viewer=viewer)
        .order_by("kind", "audience_key", "-version")
        .defer("source_turn_ids")
    )
    summaries = numbering.shown_summaries(
        experiment=experiment, viewer=viewer, summaries=summaries, sources=False
    )
    for summary in summaries:
        line = lines.setdefault(
            (summary.kind, summary.audience_key),
            Line(kind=summary.kind, audience=summary.shown_audience, key=summary.audience_key),
        )
        line.versions.append(summary)
    return list(lines.values())


def _summary(access, viewer, sid) -> Summary:
    try:
        summary_id = parse_id(sid, what="Digest")
    except Exception:
        raise Http404("Digest not found.") from None
    # ``sid`` is the number the reader was shown (`numbering.shown_summaries`).
    readable = selectors.summaries_visible_to(experiment=access.experiment, viewer=viewer)
    summary = numbering.row_at_position(readable, viewer, summary_id)
    if summary is None:
        raise Http404("Digest not found.")
    return summary


def _diff(a: Summary, b: Summary) -> list[tuple[str, str]]:
    lines = difflib.unified_diff(
        a.text.splitlines(), b.text.splitlines(), f"v{a.version}", f"v{b.version}", lineterm="", n=2
    )
    out = []
    for line in lines:
        kind = line[:1] if line[:1] in "+-@" and not line.startswith(("+++", "---")) else " "
        out.append((kind, line))
    return out


def _context(request, access, viewer, as_role, *, error=""):
    ctx = campaign_context(access, viewer, as_role=as_role, active="console:memory")
    ctx["lines"] = digest_lines(access.experiment, viewer)
    ctx["restore_error"] = error
    ctx["jobs"] = None
    if access.can_edit and not as_role:
        ctx["jobs"] = list(
            Job.objects.filter(experiment=access.experiment).order_by("-created_at")[:JOB_HISTORY]
        )
    a, b = request.GET.get("a"), request.GET.get("b")
    if a and b:
        left, right = _summary(access, viewer, a), _summary(access, viewer, b)
        if (left.kind, left.audience_key) != (right.kind, right.audience_key):
            raise Http404("Compare two versions of the same digest.")
        ctx["diff"] = {"a": left, "b": right, "lines": _diff(left, right)}
    return ctx


@login_required
@require_GET
def memory(request, pk):
    access = console_access.experiment_for(request, pk)
    viewer, as_role = console_access.viewer_for(request, access)
    partial = "diff" if request.GET.get("a") else "digests"
    return page(request, TEMPLATE, _context(request, access, viewer, as_role), partial=partial)


@login_required
@require_POST
def restore(request, pk, sid):
    """Make an older version current again (a new version with its text)."""
    access = console_access.experiment_for(request, pk, write=True)
    summary = _summary(access, access.viewer, sid)
    try:
        summary_restore(summary=summary, user=request.user)
    except ValidationError as exc:
        ctx = _context(request, access, access.viewer, "", error="; ".join(exc.messages))
        return page(request, TEMPLATE, ctx, partial="digests", status=INVALID)
    if not request.htmx:
        return redirect("console:memory", pk=access.experiment.pk)
    return page(request, TEMPLATE, _context(request, access, access.viewer, ""), partial="digests")
