"""The cold layer as stored rows: rolling digests per audience and strategic summaries.

A digest version folds the audience's previous version and the turns after its
``covered_seq`` that *every* member may read (`turns_for_audience`). It is written only
after the model call, outside any transaction, and committed under the unique
constraints ``(experiment, kind, audience_key, version)`` and ``(…, previous,
covered_seq)``: two workers folding the same audience from the same version cannot both
commit. The loser re-plans from the winner's row and, finding nothing new, returns it.

Due rule (``force=False``): an audience is summarised up to ``round_to`` when at least
``memory_interval`` rounds passed since its last digest, or when its own new turns hold
a milestone (`detect_milestones`: new NPC, item acquired, location change, decision).
Milestones are looked for per audience, so a whisper can never make another audience's
digest run (not even its timing leaks).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from campaigns.models import MONOLOGUE_KIND, Experiment, Summary, Turn
from campaigns.reads.adapters import digest_view, turn_views
from campaigns.reads.selectors import dm_roles, turns_visible_to, viewer_for_role
from campaigns.services.lore import actor_for
from campaigns.services.memory.audiences import Audience, audiences_for, turns_for_audience
from campaigns.services.memory.backends import (
    RETRY_ATTEMPTS,
    judge_calls,
    model_down,
    retry_base_delay,
    scaled_sleep,
    summarizer_client,
)
from campaigns.services.usage import worker_usage
from campaigns.validation import effective_config
from context_engine.llm import is_offline
from context_engine.memory import (
    condense_monologues,
    detect_milestones,
    fallback_digest,
    make_digest,
)
from context_engine.visibility import audience_key

log = logging.getLogger(__name__)

RAW_MONOLOGUES = 2  # the last two stay raw in the pack (§5.6); older ones are condensed
STRATEGIC_MAX_TOKENS = 300
MAX_COMMIT_ATTEMPTS = 5


def latest_summary(*, experiment: Experiment | int, kind: str, key: str) -> Summary | None:
    experiment_id = experiment if isinstance(experiment, int) else experiment.pk
    return (
        Summary.objects.filter(experiment_id=experiment_id, kind=kind, audience_key=key)
        .order_by("-version")
        .first()
    )


def _digest_tokens(experiment: Experiment) -> int:
    budget = effective_config(experiment.config)["budgets"].get("digest", 2000)
    return max(200, min(1500, int(budget)))


def _interval(experiment: Experiment) -> int:
    return int(effective_config(experiment.config)["memory_interval"])


@dataclass(frozen=True)
class DigestPlan:
    """What one fold will cover: the previous version and the audience's new turns."""

    audience: Audience
    key: str
    previous: Summary | None
    turns: tuple[Turn, ...]
    round_to: int
    late: bool = False  # revealed turns folded in after the fact: coverage does not move

    @property
    def version(self) -> int:
        return (self.previous.version + 1) if self.previous else 1

    @property
    def covered_seq(self) -> int:
        newest = max(turn.seq for turn in self.turns)
        if self.late and self.previous is not None:
            return max(newest, self.previous.covered_seq)
        return newest


def plan_digest(
    *,
    experiment: Experiment,
    audience: Sequence[str],
    round_to: int,
    up_to_seq: int | None = None,
) -> DigestPlan | None:
    """The next fold for ``audience`` up to ``round_to`` (and ``up_to_seq``), or None
    when nothing is new."""
    roles = tuple(sorted(set(audience)))
    key = audience_key(roles)
    previous = latest_summary(experiment=experiment, kind=Summary.Kind.DIGEST, key=key)
    after = previous.covered_seq if previous else 0
    turns = turns_for_audience(
        experiment=experiment,
        audience=roles,
        round_to=round_to,
        after_seq=after,
        up_to_seq=up_to_seq,
    )
    if not turns:
        return None
    return DigestPlan(
        audience=roles, key=key, previous=previous, turns=tuple(turns), round_to=round_to
    )


def digest_due(*, experiment: Experiment, plan: DigestPlan) -> str | None:
    """Why ``plan`` should run now ("interval" or a milestone), or None (not yet)."""
    last_round = plan.previous.round_to if plan.previous else -1
    if plan.round_to - last_round >= _interval(experiment):
        return "interval"
    known: set[str] = set()
    if plan.previous is not None:
        earlier = turns_for_audience(
            experiment=experiment, audience=plan.audience, round_to=plan.round_to
        )
        for turn in earlier:
            if turn.seq <= plan.previous.covered_seq:
                known.update(
                    tag.split(":", 1)[1].partition(":")[0].strip()
                    for tag in turn.tags or ()
                    if tag.lower().startswith("npc:")
                )
    dms = dm_roles(experiment=experiment)
    milestones = detect_milestones(turn_views(plan.turns, dms), known)
    return milestones[0] if milestones else None


def commit_digest(*, experiment: Experiment, plan: DigestPlan) -> Summary | None:
    """Call the model (or the template) for ``plan`` and store the new version.

    Returns the new row, or None when another worker committed this version first.
    """
    dms = dm_roles(experiment=experiment)
    previous = digest_view(plan.previous, dms)
    views = turn_views(plan.turns, dms)
    client = summarizer_client(experiment)
    max_tokens = _digest_tokens(experiment)
    if not is_offline(client) and model_down(client):
        result = fallback_digest(
            previous, views, max_tokens=max_tokens, reason=f"{client.model} failed recently"
        )
    else:
        with worker_usage(experiment=experiment, worker="digest") as calls:
            result = make_digest(
                previous,
                views,
                client=client,
                attempts=RETRY_ATTEMPTS,
                base_delay=retry_base_delay(),
                max_tokens=max_tokens,
            )
        judge_calls(client, calls)
    if result.fallback_reason:
        log.warning(
            "digest for %s of experiment %s fell back: %s",
            plan.key,
            experiment.pk,
            result.fallback_reason,
        )
    round_from = plan.previous.round_from if plan.previous else min(t.round for t in plan.turns)
    round_to = max(plan.round_to, plan.previous.round_to if plan.previous else 0)
    round_to = max(round_to, round_from, *(t.round for t in plan.turns))
    try:
        with transaction.atomic():
            return Summary.objects.create(
                experiment=experiment,
                kind=Summary.Kind.DIGEST,
                audience=list(plan.audience),
                audience_key=plan.key,
                round_from=round_from,
                round_to=round_to,
                covered_seq=plan.covered_seq,
                text=result.text,
                sections=[list(section) for section in result.sections],
                source_turn_ids=[turn.pk for turn in plan.turns],
                previous=plan.previous,
                method=result.method,
                model=result.model[:100],
                version=plan.version,
            )
    except IntegrityError:
        return None


def summarize_one(
    *,
    experiment: Experiment,
    audience: Sequence[str],
    round_to: int,
    up_to_seq: int | None = None,
    force: bool = False,
) -> Summary | None:
    """Bring one audience's digest up to ``round_to``; the new version, or None.

    Idempotent: with nothing new to fold (a rerun, or a concurrent worker that already
    committed) nothing is written. Strategic summaries of the audience's roles follow.
    """
    created: Summary | None = None
    for _ in range(MAX_COMMIT_ATTEMPTS):
        plan = plan_digest(
            experiment=experiment, audience=audience, round_to=round_to, up_to_seq=up_to_seq
        )
        if plan is None:
            break
        if not force and digest_due(experiment=experiment, plan=plan) is None:
            return None
        created = commit_digest(experiment=experiment, plan=plan)
        if created is not None:
            break
        force = True  # someone else folded first: catch up on what is still new, if any
    for role in sorted(set(audience)):
        strategic_update(experiment=experiment, role=role)
    return created


def summarize_audience(
    *,
    experiment: Experiment,
    audience: Sequence[str] | None,
    round_to: int,
    force: bool = False,
) -> list[Summary]:
    """Digest ``audience`` (None: every audience) up to ``round_to``; new rows only.

    ``force=False`` summarises only audiences that are due (module doc); /checkpoint
    and /compress force it.
    """
    if audience is None:
        targets = audiences_for(experiment=experiment, round_to=round_to)
    else:
        if not isinstance(audience, (list, tuple)) or not all(
            isinstance(role, str) for role in audience
        ):
            raise ValidationError({"audience": ["An audience is a list of roles, or null."]})
        targets = [tuple(sorted(set(audience)))]
    created = []
    for target in targets:
        summary = summarize_one(
            experiment=experiment, audience=target, round_to=round_to, force=force
        )
        if summary is not None:
            created.append(summary)
    return created


def strategic_update(*, experiment: Experiment, role: str) -> Summary | None:
    """Condense ``role``'s monologues older than its last two into its own summary.

    The source is that role's own monologues as the selector shows them to that role;
    the summary's audience is ``[role]`` alone, so no one else, not even the DM agent,
    ever reads it. A new version only when another monologue left the raw window.
    """
    viewer = viewer_for_role(experiment=experiment, role=role)
    if viewer.omniscient:
        return None  # judges read the raw log; they have no monologue memory of their own
    monologues = list(
        turns_visible_to(experiment=experiment, viewer=viewer).filter(
            MONOLOGUE_KIND, speaker=role, needs_review=False
        )
    )
    older = monologues[:-RAW_MONOLOGUES] if len(monologues) > RAW_MONOLOGUES else []
    if not older:
        return None
    key = audience_key((role,))
    for _ in range(MAX_COMMIT_ATTEMPTS):
        previous = latest_summary(experiment=experiment, kind=Summary.Kind.STRATEGIC, key=key)
        if previous is not None and previous.covered_seq >= older[-1].seq:
            return None
        dms = dm_roles(experiment=experiment)
        views = turn_views(older, dms)
        client = summarizer_client(experiment)
        if model_down(client):
            client = None
        with worker_usage(experiment=experiment, worker="strategic") as calls:
            text = condense_monologues(
                views, client=client, max_tokens=STRATEGIC_MAX_TOKENS, sleep=scaled_sleep
            )
        if client is not None:
            judge_calls(client, calls)
        if not text:
            return None
        extractive = condense_monologues(views, client=None, max_tokens=STRATEGIC_MAX_TOKENS)
        by_model = client is not None and not is_offline(client) and text != extractive
        try:
            with transaction.atomic():
                return Summary.objects.create(
                    experiment=experiment,
                    kind=Summary.Kind.STRATEGIC,
                    audience=[role],
                    audience_key=key,
                    round_from=older[0].round,
                    round_to=max(turn.round for turn in older),
                    covered_seq=older[-1].seq,
                    text=text,
                    sections=[],
                    source_turn_ids=[turn.pk for turn in older],
                    previous=previous,
                    method=Summary.Method.LLM if by_model else Summary.Method.FALLBACK,
                    model=(client.model if by_model else "offline")[:100],
                    version=(previous.version + 1) if previous else 1,
                )
        except IntegrityError:
            continue
    return None


def summary_restore(*, summary: Summary, user) -> Summary:
    """Make an older version current again: a new version with its text and coverage.

    History stays linear (nothing is deleted or rewritten); the next fold continues
    from the restored coverage, so turns after it are folded in again.
    """
    for _ in range(MAX_COMMIT_ATTEMPTS):
        latest = latest_summary(
            experiment=summary.experiment_id, kind=summary.kind, key=summary.audience_key
        )
        try:
            with transaction.atomic():
                restored = Summary.objects.create(
                    experiment_id=summary.experiment_id,
                    kind=summary.kind,
                    audience=summary.audience,
                    audience_key=summary.audience_key,
                    round_from=summary.round_from,
                    round_to=summary.round_to,
                    covered_seq=summary.covered_seq,
                    text=summary.text,
                    sections=summary.sections,
                    source_turn_ids=summary.source_turn_ids,
                    previous=latest,
                    method=summary.method,
                    model=summary.model,
                    version=(latest.version + 1) if latest else 1,
                    restored_from=summary,
                    restored_by=user if getattr(user, "pk", None) else None,
                )
        except IntegrityError:
            continue
        log.info(
            "%s restored %s v%s as v%s",
            actor_for(user),
            summary.audience_key,
            summary.version,
            restored.version,
        )
        return restored
    raise ValidationError({"summary": ["Could not restore: the digest keeps changing; retry."]})
