"""Model usage as the owner reads it: tokens per round and per agent, with the saving.

Owner and staff only (the API and the console check `is_editor` before calling these):
per-agent counts are derived from every agent's prompt, which no player may read.
"""

from __future__ import annotations

from django.db.models import Count, F, Max, Min, Q, Sum

from campaigns.models import Experiment, ModelCall

# Calls that did not answer (timed out, too long, failed): counted in ``calls`` too.
FAILED = Count("id", filter=~Q(status=ModelCall.Status.OK))


def _totals(row: dict) -> dict:
    cached = row["tokens_cached"] or 0
    return {
        "calls": row["calls"],
        "failed": row["failed"] or 0,
        "tokens_in": row["tokens_in"] or 0,
        "tokens_cached": cached,
        "tokens_out": row["tokens_out"] or 0,
        "saving_tokens": cached,
        "cached_share": round(cached / row["tokens_in"], 4) if row["tokens_in"] else 0.0,
    }


def usage_summary(*, experiment: Experiment, round: int | None = None) -> dict:
    """Tokens per agent (and in total) for one round or the whole campaign.

    ``saving_tokens`` is the cached tokens: input the provider did not process again.
    ``prefix_stable_share`` per agent is the mean over its calls that had a previous one.
    """
    calls = ModelCall.objects.filter(experiment=experiment)
    if round is not None:
        calls = calls.filter(round=round)
    sums = {
        "calls": Count("id"),
        "failed": FAILED,
        "tokens_in": Sum("tokens_in"),
        "tokens_cached": Sum("tokens_cached"),
        "tokens_out": Sum("tokens_out"),
    }
    agents = []
    rows = (
        calls.values("role")
        .annotate(
            **sums,
            first=Min("id"),
            stable_sum=Sum("prefix_stable_share"),
            stable_n=Count("prefix_stable_share"),
            models=Max("model"),
        )
        .order_by("first")
    )
    for row in rows:
        entry = {"role": row["role"], "model": row["models"], **_totals(row)}
        entry["prefix_stable_share"] = (
            round_share(row["stable_sum"] / row["stable_n"]) if row["stable_n"] else None
        )
        agents.append(entry)
    total = calls.aggregate(**sums)
    return {"round": round, "agents": agents, "total": _totals(total)}


def round_share(value: float) -> float:
    return round(float(value), 4)


def usage_rounds(*, experiment: Experiment) -> list[dict]:
    """Per-round totals, newest round first (the console's table)."""
    rows = (
        ModelCall.objects.filter(experiment=experiment)
        .values("round")
        .annotate(
            calls=Count("id"),
            failed=FAILED,
            tokens_in=Sum("tokens_in"),
            tokens_cached=Sum("tokens_cached"),
            tokens_out=Sum("tokens_out"),
            stable=Sum(F("prefix_stable_share")),
            stable_n=Count("prefix_stable_share"),
        )
        .order_by("-round")
    )
    out = []
    for row in rows:
        entry = {"round": row["round"], **_totals(row)}
        entry["prefix_stable_share"] = (
            round_share(row["stable"] / row["stable_n"]) if row["stable_n"] else None
        )
        out.append(entry)
    return out
