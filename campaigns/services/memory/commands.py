"""/checkpoint, /compress and /clear (SPEC §5.3) as services, and the turn dispatch hook.

`run_command` records a `ContextEvent` (round, seq, who) and a `Job`, and for
/checkpoint and /compress sends `run_memory_job` after commit: it catches the World
Bible up (imported logs were never hydrated turn by turn) and folds every audience's
digest up to the event's seq, forced, with progress on the Job. With no ``REDIS_URL``
Celery runs eagerly, so the call returns after the digests exist. /clear updates no
digest: its event says ``cleared_without_checkpoint``.
"""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Max

from campaigns.models import ContextEvent, Experiment, Job, Participant, Summary, Turn
from campaigns.services.dispatch import send_on_commit
from campaigns.services.memory.audiences import audience_of_role, audiences_for
from campaigns.services.memory.digests import latest_summary, summarize_one
from campaigns.services.memory.hydrate import hydrate_batch
from campaigns.services.memory.vetting import vet_entries
from context_engine.visibility import audience_key

log = logging.getLogger(__name__)

COMMANDS = tuple(ContextEvent.Command.values)


def _clean_role(experiment: Experiment, role: object) -> str | None:
    if role in (None, ""):
        return None
    participant = None
    if isinstance(role, str):
        participant = experiment.participants.filter(role=role).first()
    if participant is None:
        roles = ", ".join(sorted(experiment.participants.values_list("role", flat=True)))
        raise ValidationError({"role": [f"Unknown role {role!r}; roles are: {roles}."]})
    if participant.kind == Participant.Kind.JUDGE:
        raise ValidationError({"role": ["Judges read the raw log; they have no digest."]})
    return participant.role


def run_command(*, experiment: Experiment, command: str, user, role: str | None = None) -> Job:
    """Run /checkpoint, /compress or /clear for every agent, or for ``role``'s audience.

    Returns the Job (re-read after an eager run, so its status is final then).
    """
    if command not in COMMANDS:
        raise ValidationError(
            {"command": [f"Unknown command {command!r}; commands: {', '.join(COMMANDS)}."]}
        )
    role = _clean_role(experiment, role)
    with transaction.atomic():
        # The same lock turn_create takes: the event's seq is exactly the last stored turn.
        locked = Experiment.objects.select_for_update().get(pk=experiment.pk)
        last = Turn.objects.filter(experiment=locked).aggregate(seq=Max("seq"), round=Max("round"))
        event = ContextEvent.objects.create(
            experiment=locked,
            command=command,
            role=role or "",
            round=last["round"] or 0,
            seq=last["seq"] or 0,
            user=user if getattr(user, "pk", None) else None,
            cleared_without_checkpoint=command == ContextEvent.Command.CLEAR,
        )
        job = Job.objects.create(
            experiment=locked,
            kind=command,
            user=user if getattr(user, "pk", None) else None,
            result={"event": event.pk, "round": event.round, "seq": event.seq},
        )
        if command == ContextEvent.Command.CLEAR:
            job.status = Job.Status.SUCCEEDED
            job.progress = 100
            job.message = f"Transcript cleared at seq {event.seq}; the digest was not updated."
            job.save(update_fields=["status", "progress", "message", "updated_at"])
        else:
            send_on_commit("run_memory_job", str(job.pk))
    if not connection.in_atomic_block:
        job.refresh_from_db()
    return job


def _progress(job: Job, progress: int, message: str, **fields) -> None:
    Job.objects.filter(pk=job.pk).update(progress=progress, message=message[:500], **fields)


def memory_job_run(*, job: Job) -> Job:
    """The body of a /checkpoint or /compress job. Never raises: failures go on the Job."""
    claimed = Job.objects.filter(
        pk=job.pk, status__in=[Job.Status.PENDING, Job.Status.RUNNING]
    ).update(status=Job.Status.RUNNING)
    if not claimed:
        return Job.objects.get(pk=job.pk)  # already finished: a redelivery adds nothing
    try:
        event = ContextEvent.objects.get(pk=job.result["event"])
        experiment = event.experiment
        lore = hydrate_batch(experiment=experiment, up_to_seq=event.seq)
        totals = job.result.get("lore", {"created": 0, "updated": 0, "turns": 0})
        totals = {
            "created": totals["created"] + len(lore.created),
            "updated": totals["updated"] + len(lore.updated),
            "turns": totals["turns"] + lore.turns,
        }
        job.result = {**job.result, "lore": totals}
        if not lore.done:
            # One batch per task run keeps each run well inside the time limit; the
            # cursor is committed, so a killed worker's rerun resumes after it.
            share = lore.hydrated_to / max(1, event.seq)
            _progress(
                job,
                1 + int(8 * share),
                f"World Bible: read {lore.hydrated_to} of {event.seq} turns",
                result=job.result,
            )
            send_on_commit("run_memory_job", str(job.pk))
            return Job.objects.get(pk=job.pk)
        if "vetted" not in job.result:
            _progress(job, 9, "Vetting new World Bible proposals", result=job.result)
            try:
                job.result = {**job.result, "vetted": vet_entries(experiment=experiment)}
            except Exception:  # vetting is optional: the rules' proposals stand
                log.exception("vetting failed for experiment %s", experiment.pk)
                job.result = {**job.result, "vetted": {"vetted": 0, "rejected": 0}}
        _progress(job, 10, "World Bible current", result=job.result)
        if event.role:
            targets = [audience_of_role(experiment=experiment, role=event.role)]
        else:
            targets = audiences_for(experiment=experiment)
        summaries = []
        for index, target in enumerate(targets):
            _progress(
                job,
                10 + 85 * index // max(1, len(targets)),
                f"Digest {index + 1} of {len(targets)}: {', '.join(target)}",
            )
            summarize_one(
                experiment=experiment,
                audience=target,
                round_to=event.round,
                up_to_seq=event.seq,
                force=True,
            )
            current = latest_summary(experiment=experiment, kind="digest", key=audience_key(target))
            if current is not None:
                summaries.append(
                    {
                        "audience": list(target),
                        "summary": current.pk,
                        "version": current.version,
                        "method": current.method,
                        "model": current.model,
                        "covered_seq": current.covered_seq,
                    }
                )
        result = {
            **job.result,
            "audiences": [list(t) for t in targets],
            "summaries": summaries,
            "lore_created": totals["created"],
            "lore_updated": totals["updated"],
        }
        fallbacks = sum(1 for s in summaries if s["method"] == Summary.Method.FALLBACK)
        repaired = sum(1 for s in summaries if s["method"] == Summary.Method.REPAIRED)
        _progress(
            job,
            100,
            f"{len(summaries)} digest(s) current"
            + (f", {fallbacks} by the template fallback" if fallbacks else "")
            + (f", {repaired} repaired from the offline digest" if repaired else ""),
            status=Job.Status.SUCCEEDED,
            result=result,
        )
    except Exception as exc:  # the job must end in a state the UI can show
        log.exception("memory job %s failed", job.pk)
        _progress(job, 100, f"Failed: {type(exc).__name__}: {exc}", status=Job.Status.FAILED)
    return Job.objects.get(pk=job.pk)


def after_turn_created(*, turn: Turn, previous_round: int | None) -> None:
    """Dispatch hook for `turn_create`: hydrate this turn; when the turn opens a new
    round, ask the summarizer whether the finished round makes any audience due.

    Both are sent after commit and run in a worker, so the relay never waits on them.
    """
    send_on_commit("hydrate_turn", turn.pk)
    if previous_round is not None and turn.round > previous_round:
        send_on_commit("summarize_audience", turn.experiment_id, None, previous_round)
