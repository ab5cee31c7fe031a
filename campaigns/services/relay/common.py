"""What the relay's modules share: its limits and messages, the Job's updates, the
round task's dispatch, a step's key row, and a waiting round sent on."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from campaigns.models import Job, RoundStep
from campaigns.services import dispatch

HUMAN = "human"
# Why a human DM's answer step is skipped, every round alike (see `_Round.run`).
HUMAN_ANSWERS = "a human DM answers whispers on the whispers page"
RETRY_ATTEMPTS = 3
ROUND_SOFT_TIME_LIMIT = 1740  # seconds; the task's limits (see campaigns.tasks.run_round)
ROUND_TIME_LIMIT = 1800
ALREADY_RUNNING = "A round is already running."
PLAYING = "Rounds are being played (Play N rounds); stop that first."
WAITING_FOR = "The round is waiting for "
ERROR_CHARS = 300
ACTIVE = (Job.Status.PENDING, Job.Status.RUNNING, Job.Status.WAITING)

ProgressCallback = Callable[[int, str], None]


def stale_after() -> timedelta:
    """No progress this long on a pending or running round: its worker died."""
    return timedelta(seconds=float(getattr(settings, "BABEL_ROUND_STALE_S", ROUND_TIME_LIMIT)))


def _update_job(job_id, **fields) -> None:
    if "message" in fields:
        fields["message"] = fields["message"][:500]
    Job.objects.filter(pk=job_id).update(updated_at=timezone.now(), **fields)


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, ValidationError):
        text = "; ".join(exc.messages)
    return " ".join(text.split())[:ERROR_CHARS]


def _dispatch(job_id: str) -> None:
    dispatch.task("run_round").delay(job_id)


def _dispatch_timeout(job_id: str, round_: int, step: str, role: str, seconds: int) -> None:
    human_timeout = dispatch.task("human_timeout")
    if human_timeout.app.conf.task_always_eager:
        # No broker, no clock: an eager "countdown" would fire now. Without a worker the
        # round waits for the human (or `human_timeout` called by hand).
        return
    human_timeout.apply_async((job_id, round_, step, role), countdown=seconds)


def _store_step_row(*, experiment_id, round_, step, speaker, job_id, **fields) -> bool:
    """Create a step's key row; False (and nothing stored) if the step is already stored."""
    try:
        with transaction.atomic():
            RoundStep.objects.create(
                experiment_id=experiment_id,
                round=round_,
                step=step,
                speaker=speaker,
                job_id=job_id,
                **fields,
            )
    except IntegrityError:
        return False
    return True


def _continue(job: Job, message: str) -> None:
    """A waiting round goes back to pending; its task is sent after commit."""
    resumed = Job.objects.filter(pk=job.pk, status=Job.Status.WAITING).update(
        status=Job.Status.PENDING, message=message[:500], updated_at=timezone.now()
    )
    if resumed:
        transaction.on_commit(partial(_dispatch, str(job.pk)))
