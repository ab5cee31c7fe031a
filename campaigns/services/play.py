""" "Play N rounds" (issue 24): one background Job that plays rounds one after another.

A play Job (``kind="play"``) holds its plan in ``result``: ``rounds`` (how many),
``played`` (rounds ended so far), ``round_job`` (the round it is on), ``first_round``
and ``stop``. Its task (`campaigns.tasks.run_play`) takes the Job's id and calls
`play_run`, which plays the rounds in-process with `relay.round_run`, each round its own
round Job (so every round keeps the relay's guarantees: one at a time, idempotent steps,
resumable), and between rounds reads ``stop``.

- Idempotent: `play_run` claims the Job by conditional UPDATE (pending, or waiting whose
  round has ended, → running); a duplicated task finds it claimed and returns. The round
  it is on is recorded before it runs, so a resumed play finishes that round (the relay
  resumes it from its first step not stored) instead of starting another.
- A round that waits for a human parks the play Job (``waiting``) and frees the worker;
  when that round ends (the human posted, was skipped, or timed out) the relay sends the
  play on (`relay.rounds._continue_play`).
- Stop (`play_stop`) takes effect between rounds; a play parked on a human, or not
  started yet, ends at once (the round it waits on stays for the DM to skip or finish).
- While a play is active no other round can start (`round_create`), and a long play
  hops to a fresh task every `HOP_AFTER_S` seconds so no task outlives its time limit.

With no ``REDIS_URL`` Celery runs eagerly: `play_start` returns after every round ran
(or the first human was reached).
"""

from __future__ import annotations

import time

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from campaigns.models import Experiment, Job
from campaigns.services import relay
from campaigns.services.dispatch import send_on_commit

MAX_ROUNDS = 50
HOP_AFTER_S = 600.0
ALREADY_PLAYING = "Rounds are already being played; stop them first."


def _rounds(count: int) -> str:
    return f"{count} round{'s' if count != 1 else ''}"


def _clean_rounds(rounds: object) -> int:
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
        raise ValidationError({"rounds": [f"Play from 1 to {MAX_ROUNDS} rounds."]})
    return rounds


def play_active(*, experiment: Experiment) -> Job | None:
    """The experiment's pending, running or waiting play Job, if any."""
    return (
        Job.objects.filter(experiment=experiment, kind=Job.Kind.PLAY, status__in=relay.ACTIVE)
        .order_by("-created_at")
        .first()
    )


def play_start(*, experiment: Experiment, rounds: object, user=None) -> Job:
    """Start playing ``rounds`` rounds (1–50) in the background; returns the play Job.

    Refused (ValidationError naming ``rounds``) while a play or a round is active, or
    when the cast cannot play a round.
    """
    count = _clean_rounds(rounds)
    with transaction.atomic():
        locked = Experiment.objects.select_for_update().get(pk=experiment.pk)
        try:
            relay.check_cast(locked)
        except ValidationError as exc:
            raise ValidationError({"rounds": exc.messages}) from None
        if play_active(experiment=locked) is not None:
            raise ValidationError({"rounds": [ALREADY_PLAYING]})
        active = Job.objects.filter(
            experiment=locked, kind=Job.Kind.ROUND, status__in=relay.ACTIVE
        ).first()
        if active is not None:
            waiting = (active.result or {}).get("waiting") or {}
            message = (
                f"{relay.WAITING_FOR}{waiting['role']}."
                if active.status == Job.Status.WAITING and waiting.get("role")
                else relay.ALREADY_RUNNING
            )
            raise ValidationError({"rounds": [message]})
        try:
            with transaction.atomic():
                job = Job.objects.create(
                    experiment=locked,
                    kind=Job.Kind.PLAY,
                    user=user if getattr(user, "pk", None) else None,
                    message=f"Playing {_rounds(count)}: waiting for a worker",
                    result={
                        "rounds": count,
                        "played": 0,
                        "first_round": locked.current_round + 1,
                        "round_job": None,
                        "stop": False,
                    },
                )
        except IntegrityError:
            raise ValidationError({"rounds": [ALREADY_PLAYING]}) from None
        send_on_commit("run_play", str(job.pk))
    if not connection.in_atomic_block:
        job.refresh_from_db()
    return job


@transaction.atomic
def _save(job_id, result: dict, **fields) -> None:
    """Write the play's result and fields, keeping a Stop that came in meanwhile."""
    stored = Job.objects.select_for_update().filter(pk=job_id).values_list("result", flat=True)
    stopped = bool(((stored.first() or {}) or {}).get("stop"))
    if "message" in fields:
        fields["message"] = fields["message"][:500]
    Job.objects.filter(pk=job_id).update(
        result={**result, "stop": bool(result.get("stop")) or stopped},
        updated_at=timezone.now(),
        **fields,
    )


def _end(job_id, status: str, message: str, result: dict) -> None:
    _save(job_id, result, status=status, message=message)


def play_stop(*, experiment: Experiment, job: Job) -> Job:
    """Stop a play between rounds (or at once if it waits for a human or a worker)."""
    with transaction.atomic():
        locked = (
            Job.objects.select_for_update()
            .filter(pk=job.pk, experiment=experiment, kind=Job.Kind.PLAY)
            .first()
        )
        if locked is None or locked.status not in relay.ACTIVE:
            raise ValidationError({"stop": ["These rounds have finished already."]})
        result = {**(locked.result or {}), "stop": True}
        played = result.get("played", 0)
        if locked.status == Job.Status.RUNNING:
            Job.objects.filter(pk=locked.pk).update(
                result=result,
                message="Stopping after the round being played…",
                updated_at=timezone.now(),
            )
        else:
            message = f"Stopped after {played} of {result.get('rounds')} round(s)"
            if locked.status == Job.Status.WAITING:
                message += "; the round waiting for a human is still open"
            _end(locked.pk, Job.Status.SUCCEEDED, message, result)
    job.refresh_from_db()
    return job


def _claim(job_id) -> bool:
    """pending → running, or waiting → running once the round it waits on has ended, or a
    running play whose worker died (no update for `relay.stale_after`)."""
    now = timezone.now()
    jobs = Job.objects.filter(pk=job_id, kind=Job.Kind.PLAY)
    if jobs.filter(status=Job.Status.PENDING).update(status=Job.Status.RUNNING, updated_at=now):
        return True
    job = jobs.filter(status=Job.Status.WAITING).first()
    if job is not None:
        current = (job.result or {}).get("round_job")
        if not Job.objects.filter(pk=current, status__in=relay.ACTIVE).exists():
            return bool(
                jobs.filter(status=Job.Status.WAITING).update(
                    status=Job.Status.RUNNING, updated_at=now
                )
            )
        return False
    return bool(
        jobs.filter(status=Job.Status.RUNNING, updated_at__lt=now - relay.stale_after()).update(
            updated_at=now
        )
    )


def _progress(job_id, result: dict, message: str) -> None:
    percent = min(99, 100 * result.get("played", 0) // max(1, result.get("rounds", 1)))
    _save(job_id, result, progress=percent, message=message)


def play_run(*, job_id) -> Job | None:
    """Play the Job's rounds until they are all played, it is stopped, a round fails, or
    a round waits for a human. Never raises for a round: failures end the Job."""
    if not _claim(job_id):
        return Job.objects.filter(pk=job_id).first()
    started = time.monotonic()
    while True:
        job = Job.objects.select_related("experiment", "user").filter(pk=job_id).first()
        if job is None:
            return None
        result = dict(job.result or {})
        rounds = result.get("rounds", 1)
        current = result.get("round_job")
        if current:
            round_job = Job.objects.filter(pk=current).first()
            if round_job is not None and round_job.status in relay.ACTIVE:
                if round_job.status != Job.Status.WAITING:
                    # Ours, recorded before it ran, and not finished: a resumed play.
                    relay.round_run(job_id=current, continue_play=False)
                    continue
                if _park(job, round_job):
                    return Job.objects.filter(pk=job_id).first()
                continue
            result["round_job"] = None
            if round_job is None or round_job.status == Job.Status.FAILED:
                why = round_job.message if round_job is not None else "its round job is gone"
                _end(job_id, Job.Status.FAILED, f"Stopped: {why}", result)
                return Job.objects.filter(pk=job_id).first()
            result["played"] = result.get("played", 0) + 1
            result["last_round"] = round_job.result.get("round")
        played = result.get("played", 0)
        if result.get("stop"):
            _end(
                job_id, Job.Status.SUCCEEDED, f"Stopped after {played} of {rounds} round(s)", result
            )
            return Job.objects.filter(pk=job_id).first()
        if played >= rounds:
            last = result.get("last_round")
            done = f"Played {_rounds(rounds)}"
            if last is not None:
                done += f" (rounds {result.get('first_round', last)}–{last})"
            _save(job_id, result, status=Job.Status.SUCCEEDED, progress=100, message=done)
            return Job.objects.filter(pk=job_id).first()
        if time.monotonic() - started > HOP_AFTER_S:
            # A fresh task for the rest: each task stays inside its time limit.
            with transaction.atomic():
                _save(job_id, result, status=Job.Status.PENDING)
                send_on_commit("run_play", str(job_id))
            return Job.objects.filter(pk=job_id).first()
        try:
            round_job = relay.round_create(experiment=job.experiment, user=job.user, play=job)
        except ValidationError as exc:
            _end(job_id, Job.Status.FAILED, "Stopped: " + "; ".join(exc.messages), result)
            return Job.objects.filter(pk=job_id).first()
        result["round_job"] = str(round_job.pk)
        _progress(job_id, result, f"Round {played + 1} of {rounds}")
        relay.round_run(job_id=round_job.pk, continue_play=False)


def _park(job: Job, round_job: Job) -> bool:
    """The round waits for a human: the play waits too (True). If the round ended while
    parking, and the play is ours again, go on (False)."""
    waiting = (round_job.result or {}).get("waiting") or {}
    result = dict(job.result or {})
    _progress(
        job.pk,
        result,
        f"Round {waiting.get('round', '?')}: waiting for {waiting.get('role', 'a human')}",
    )
    Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING).update(status=Job.Status.WAITING)
    if Job.objects.filter(pk=round_job.pk, status__in=relay.ACTIVE).exists():
        return True
    # The round ended between the two reads: take the play back unless the relay did.
    claimed = Job.objects.filter(pk=job.pk, status=Job.Status.WAITING).update(
        status=Job.Status.RUNNING, updated_at=timezone.now()
    )
    return not claimed
