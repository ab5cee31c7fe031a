"""`/campaigns/<id>/usage/` — tokens in, cached and out per round and per agent (owner/staff).

Players get 403 like the Arena page: per-agent counts come from every agent's prompt.
"""

from __future__ import annotations

from django.conf import settings
from django.views.decorators.http import require_GET

from campaigns.console import access as console_access
from campaigns.console.views.base import campaign_context, login_required, page
from campaigns.reads.usage import usage_rounds, usage_summary

TEMPLATE = "campaigns/console/usage.html"


def _round_param(raw: str | None, rounds: list[dict]) -> int | None:
    """The ``?round=`` asked for if it is a round with calls, else the latest one."""
    known = [r["round"] for r in rounds]
    if raw is not None and raw.isdigit() and int(raw) in known:
        return int(raw)
    return known[0] if known else None


@login_required
@require_GET
def usage(request, pk):
    access = console_access.experiment_for(request, pk, write=True)
    rounds = usage_rounds(experiment=access.experiment)
    chosen = _round_param(request.GET.get("round"), rounds)
    ctx = campaign_context(access, access.viewer, active="console:usage")
    ctx.update(
        rounds=rounds,
        chosen=chosen,
        summary=usage_summary(experiment=access.experiment, round=chosen)
        if chosen is not None
        else None,
        campaign_total=usage_summary(experiment=access.experiment)["total"],
        gemini_cache=settings.BABEL_GEMINI_CONTEXT_CACHE,
    )
    return page(request, TEMPLATE, ctx, partial="agents")
