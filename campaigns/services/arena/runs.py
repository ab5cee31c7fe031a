"""Arena runs: the synchronous report (the command) and the background Job (API, console).

`arena_start` validates the parameters, creates the Job and sends `run_arena` after
commit. `arena_job_run` claims the Job once (pending → running by conditional UPDATE),
replays, and stores one `ArenaRun` per Job (``get_or_create`` on the job: a redelivered
task adds nothing). Progress goes on the Job as the packs are built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass

from django.core.exceptions import ValidationError
from django.db import connection, transaction

from campaigns.models import ArenaRun, Experiment, Job
from campaigns.services.arena.history import facts_for, history_for, judge_for, questions_for
from campaigns.services.dispatch import send_on_commit
from context_engine.arena import DEFAULT_BUDGETS, DEFAULT_EVERY, ArenaOptions, Replay, run_arena
from context_engine.llm.factory import is_known_model_id
from context_engine.types import STRATEGIES

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ArenaParams:
    strategies: tuple[str, ...] = STRATEGIES
    budgets: tuple[int, ...] = DEFAULT_BUDGETS
    every: int = DEFAULT_EVERY
    roles: tuple[str, ...] = ()
    judge: str = "offline"

    @classmethod
    def clean(cls, *, experiment: Experiment, **raw) -> ArenaParams:
        """Parameters from user input, or ValidationError naming the field."""
        strategies = tuple(raw.get("strategies") or STRATEGIES)
        bad = [s for s in strategies if s not in STRATEGIES]
        if bad:
            raise ValidationError(
                {
                    "strategies": [
                        f"Unknown strategy {bad[0]!r}; choose from {', '.join(STRATEGIES)}."
                    ]
                }
            )
        budgets = tuple(int(b) for b in (raw.get("budgets") or DEFAULT_BUDGETS))
        if any(b < 500 for b in budgets):
            raise ValidationError({"budgets": ["Each budget is at least 500 tokens."]})
        every = int(raw.get("every") or DEFAULT_EVERY)
        if every < 1:
            raise ValidationError({"every": ["Must be at least 1."]})
        roles = tuple(raw.get("roles") or ())
        known = set(experiment.participants.values_list("role", flat=True))
        unknown = [r for r in roles if r not in known]
        if unknown:
            raise ValidationError(
                {"roles": [f"Unknown role {unknown[0]!r}; roles are: {', '.join(sorted(known))}."]}
            )
        judge = raw.get("judge") or "offline"
        if judge != "offline" and not is_known_model_id(judge):
            raise ValidationError(
                {"judge": [f"Unknown judge {judge!r}: 'offline', 'gemini-…' or 'openai:NAME'."]}
            )
        return cls(
            strategies=tuple(dict.fromkeys(strategies)),
            budgets=tuple(dict.fromkeys(budgets)),
            every=every,
            roles=tuple(dict.fromkeys(roles)),
            judge=judge,
        )

    def as_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def arena_report(
    *,
    experiment: Experiment,
    params: ArenaParams,
    progress: Callable[[int, int, str], None] | None = None,
    judge=None,
    clock=None,
) -> tuple[dict, dict]:
    """(report, details) for ``experiment``: the history is loaded once, then pure Python."""
    history = history_for(experiment=experiment)
    facts, source = facts_for(experiment=experiment, history=history)
    judge = judge or judge_for(params.judge)
    options = ArenaOptions(
        strategies=params.strategies, budgets=params.budgets, every=params.every, roles=params.roles
    )
    kwargs = {"clock": clock} if clock is not None else {}
    report, details = run_arena(
        Replay(history),
        facts,
        options,
        questions=questions_for(experiment=experiment),
        judge=judge,
        progress=progress,
        experiment=experiment.pk,
        **kwargs,
    )
    details["facts_source"] = source
    details["last_round"] = history.last_round
    return report, details


def arena_start(*, experiment: Experiment, user, **raw) -> Job:
    """Validate, create the Arena Job, and send it after commit (eager without Redis)."""
    params = ArenaParams.clean(experiment=experiment, **raw)
    with transaction.atomic():
        job = Job.objects.create(
            experiment=experiment,
            kind=Job.Kind.ARENA,
            user=user if getattr(user, "pk", None) else None,
            message="Queued",
            result={"params": params.as_dict()},
        )
        send_on_commit("run_arena", str(job.pk))
    if not connection.in_atomic_block:
        job.refresh_from_db()
    return job


def _progress(job: Job, progress: int, message: str, **fields) -> None:
    Job.objects.filter(pk=job.pk).update(progress=progress, message=message[:500], **fields)


def arena_job_run(*, job: Job) -> Job:
    """The body of an Arena job. Never raises: failures go on the Job."""
    claimed = Job.objects.filter(pk=job.pk, status=Job.Status.PENDING).update(
        status=Job.Status.RUNNING, progress=1, message="Loading the campaign"
    )
    if not claimed:
        return Job.objects.get(pk=job.pk)  # running elsewhere or finished: nothing more
    try:
        experiment = job.experiment
        params = ArenaParams.clean(experiment=experiment, **job.result.get("params", {}))

        def progress(done: int, total: int, label: str) -> None:
            _progress(
                job, min(98, 2 + 96 * done // max(1, total)), f"{done}/{total} packs: {label}"
            )

        report, details = arena_report(experiment=experiment, params=params, progress=progress)
        run, _ = ArenaRun.objects.get_or_create(
            job=job,
            defaults={
                "experiment": experiment,
                "params": params.as_dict(),
                "report": report,
                "details": details,
            },
        )
        rec = report["recommended"]
        summary = f"{rec['strategy']} @ {rec['budget']}" if rec else "none (every config leaks)"
        _progress(
            job,
            100,
            f"Arena done: {len(report['results'])} configurations; recommended {summary}. "
            + details["judge"]["note"],
            status=Job.Status.SUCCEEDED,
            result={**job.result, "arena_run": run.pk, "recommended": rec},
        )
    except Exception as exc:  # the job must end in a state the UI can show
        log.exception("arena job %s failed", job.pk)
        _progress(job, 100, f"Failed: {type(exc).__name__}: {exc}", status=Job.Status.FAILED)
    return Job.objects.get(pk=job.pk)


def latest_arena_run(*, experiment: Experiment) -> ArenaRun | None:
    return ArenaRun.objects.filter(experiment=experiment).order_by("-created_at", "-id").first()
