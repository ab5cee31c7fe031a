"""`/campaigns/<id>/arena/`: the latest Arena report, the recommended configuration, and a
button that starts a run (owner and staff only: a report summarises facts across every
audience). One view serves the page and, for htmx, its ``status`` fragment, which polls
while a run is in progress and stops (286, and reloads the page) once it has ended.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseStopPolling

from campaigns.access import Access
from campaigns.console import access as console_access
from campaigns.console.views.base import campaign_context
from campaigns.models import Job
from campaigns.services.arena import arena_start, latest_arena_run
from campaigns.services.arena.plot import arena_plot
from context_engine.arena.run import below_floor, categories_of

TEMPLATE = "campaigns/console/arena.html"
ACTIVE = (Job.Status.PENDING, Job.Status.RUNNING)


def _context(access: Access, error: str = "") -> dict:
    experiment = access.experiment
    header = campaign_context(access, access.viewer, active="console:arena")
    run = latest_arena_run(experiment=experiment)
    job = experiment.jobs.filter(kind=Job.Kind.ARENA).order_by("-created_at").first()
    report = run.report if run else None
    recommended = (report or {}).get("recommended") or {}
    rows = []
    for row in (report or {}).get("results", []):
        rows.append(
            {
                **row,
                "retention_pct": f"{100 * row['retention']:.1f}",
                "hinge_pct": f"{100 * row['hinge_retention']:.1f}",
                "share_pct": (
                    f"{100 * row['mean_tokens'] / report['full_history_tokens']:.1f}"
                    if report.get("full_history_tokens")
                    else "–"
                ),
                "recommended": recommended.get("strategy") == row["strategy"]
                and recommended.get("budget") == row["budget"],
            }
        )
    return {
        "experiment": experiment,
        "run": run,
        "report": report,
        "rows": rows,
        **_recall(report or {}, recommended),
        "recommended": recommended,
        "judge_note": (run.details.get("judge") or {}).get("note", "") if run else "",
        "job": job,
        "running": job is not None and job.status in ACTIVE,
        "error": error,
        **header,
    }


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _recall(report: dict, recommended: dict) -> dict:
    """The evidence-recall table (when the campaign has questions): every configuration
    and the two floors, recall overall and per category."""
    floors = report.get("floors") or []
    if not floors:
        return {"recall_rows": [], "categories": []}
    categories = categories_of(report)
    rows = []
    for row in [*report["results"], *floors]:
        cats = row.get("evidence_by_category", {})
        floor = row in floors
        rows.append(
            {
                "strategy": row["strategy"],
                "budget": row["budget"],
                "floor": floor,
                "recall_pct": _pct(row.get("evidence_recall")),
                "by_category": [_pct(cats.get(c)) for c in categories],
                "tokens": row.get("evidence_tokens", 0),
                "below_bm25": not floor and below_floor(row, floors),
                "recommended": (recommended.get("strategy"), recommended.get("budget"))
                == (row["strategy"], row["budget"]),
            }
        )
    return {"recall_rows": rows, "categories": categories}


@login_required
@require_http_methods(["GET", "POST"])
def arena_page(request, experiment_id: int):
    access = console_access.experiment_for(request, experiment_id, write=True)
    if request.method == "POST":
        try:
            arena_start(experiment=access.experiment, user=request.user)
        except ValidationError as exc:
            context = _context(access, error="; ".join(exc.messages))
            return render(request, TEMPLATE, context, status=400)
        return redirect(reverse("console:arena", args=[access.experiment.pk]))
    context = _context(access)
    if request.htmx:
        response = render(request, TEMPLATE + "#status", context)
        if not context["running"]:
            # Polling only happens while a run was in progress: it has just ended, so stop
            # polling and reload the page once to show the new report.
            stopped = HttpResponseStopPolling(response.content)
            stopped["HX-Refresh"] = "true"
            return stopped
        return response
    return render(request, TEMPLATE, context)


@login_required
@require_http_methods(["GET"])
def arena_plot_png(request, experiment_id: int):
    """The latest report's plot (retention vs tokens, retention over rounds), as a PNG."""
    import io

    access = console_access.experiment_for(request, experiment_id, write=True)
    run = latest_arena_run(experiment=access.experiment)
    if run is None or not run.report.get("results"):
        raise Http404("No Arena report yet.")
    buffer = io.BytesIO()
    arena_plot(run.report, run.details, buffer)
    return HttpResponse(buffer.getvalue(), content_type="image/png")
