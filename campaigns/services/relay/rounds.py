"""The round lifecycle: create a round's Job (one at a time per experiment), start it in
the background, resume a round whose worker died, and run it (`round_run`)."""

from __future__ import annotations

import logging
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from campaigns.models import Experiment, Job, Participant
from campaigns.services import dispatch
from campaigns.services.relay.common import (
    ACTIVE,
    ALREADY_RUNNING,
    HUMAN,
    PLAYING,
    WAITING_FOR,
    ProgressCallback,
    _describe,
    _dispatch,
    _update_job,
    stale_after,
)
from campaigns.services.relay.runner import _Round
from campaigns.services.relay.streaming import publish_progress

log = logging.getLogger(__name__)


def _active_rounds(experiment: Experiment):
    return Job.objects.filter(experiment=experiment, kind=Job.Kind.ROUND, status__in=ACTIVE)


def _round_running(experiment: Experiment) -> bool:
    """Whether a round job of this experiment is pending, running or waiting. Call it
    holding the experiment's row lock, and create the next job under the same lock."""
    return _active_rounds(experiment).exists()


def check_cast(experiment: Experiment) -> None:
    """A round needs a DM participant and at least one DM or player played by a model."""
    participants = list(experiment.participants.all())
    if not any(p.kind == Participant.Kind.DM for p in participants):
        raise ValidationError({"round": ["The experiment needs a DM participant to run a round."]})
    acting = [p for p in participants if p.kind in (Participant.Kind.DM, Participant.Kind.PLAYER)]
    if all(p.model == HUMAN for p in acting):
        raise ValidationError(
            {"round": ["No DM or player is played by a model: every one of them is human."]}
        )


def _resume_stale(locked: Experiment) -> Job | None:
    """A pending or running round with no progress for `stale_after` goes back to pending
    (to be dispatched again); returns it. Call it holding the experiment's row lock."""
    now = timezone.now()
    stale = (
        _active_rounds(locked)
        .filter(status__in=[Job.Status.PENDING, Job.Status.RUNNING])
        .filter(updated_at__lt=now - stale_after())
        .first()
    )
    if stale is None:
        return None
    Job.objects.filter(pk=stale.pk).update(
        status=Job.Status.PENDING,
        message="Resuming: the worker stopped; the round goes on from its first step not stored",
        updated_at=now,
    )
    stale.refresh_from_db()
    return stale


@transaction.atomic
def round_create(*, experiment: Experiment, user=None, play: Job | None = None) -> Job:
    """The pending Job of the next round, unless one is already pending, running or
    waiting. A round whose worker died (see `stale_after`) is returned instead, pending
    again, to be resumed.

    Raises ValidationError ``{"round": [...]}``; while a "Play N rounds" job is active
    only that job (``play``) starts rounds. Does not dispatch: `round_start` does, and
    ``manage.py run_campaign`` and `services.play` run it in-process with `round_run`.
    """
    locked = Experiment.objects.select_for_update().get(pk=experiment.pk)
    check_cast(locked)
    playing = Job.objects.filter(experiment=locked, kind=Job.Kind.PLAY, status__in=ACTIVE)
    if play is not None:
        playing = playing.exclude(pk=play.pk)
    if playing.exists():
        raise ValidationError({"round": [PLAYING]})
    resumed = _resume_stale(locked)
    if resumed is not None:
        return resumed
    waiting = _active_rounds(locked).filter(status=Job.Status.WAITING).first()
    if waiting is not None:
        role = (waiting.result.get("waiting") or {}).get("role", "a human")
        raise ValidationError({"round": [f"{WAITING_FOR}{role}."]})
    if _round_running(locked):
        raise ValidationError({"round": [ALREADY_RUNNING]})
    if locked.current_round >= settings.BABEL_MAX_ROUND:
        raise ValidationError(
            {"round": [f"The campaign is at its last round ({settings.BABEL_MAX_ROUND})."]}
        )
    try:
        with transaction.atomic():  # the job_one_active_round constraint is the backstop
            job = Job.objects.create(
                experiment=locked,
                kind=Job.Kind.ROUND,
                user=user if getattr(user, "pk", None) else None,
                message="Waiting for a worker",
                result={},
            )
    except IntegrityError:
        raise ValidationError({"round": [ALREADY_RUNNING]}) from None
    # A draft campaign whose first round starts is running (paused, finished or archived
    # ones keep what the owner set).
    Experiment.objects.filter(pk=locked.pk, status=Experiment.Status.DRAFT).update(
        status=Experiment.Status.RUNNING
    )
    return job


def round_start(*, experiment: Experiment, user=None) -> Job:
    """Start the next round in the background and return its Job (SPEC §8 rounds); or
    resume the round whose worker died, returning its Job.

    The task is sent after commit. With no ``REDIS_URL`` Celery runs it eagerly, so this
    returns once the round is over or waits for a human (the Job re-read).
    """
    with transaction.atomic():
        job = round_create(experiment=experiment, user=user)
        transaction.on_commit(partial(_dispatch, str(job.pk)))
    if not connection.in_atomic_block:
        job.refresh_from_db()
    return job


def round_run(
    *, job_id, on_progress: ProgressCallback | None = None, continue_play: bool = True
) -> Job | None:
    """Run the round of a pending Job until it ends or waits for a human. Never raises
    for a model or a step: failures are on the Job and in DM-only system turns.

    Returns the Job (``None`` if it no longer exists). A Job that is not pending (already
    claimed, waiting, finished) is returned untouched, unless it is running with no
    progress for `stale_after` (its worker died): then it is claimed and resumed.

    A round of a "Play N rounds" job that waited for a human ends in this call's task;
    with ``continue_play`` the play job waiting on it is sent on (`services.play`, by
    task name). The play job runs its rounds inline with ``continue_play=False``.
    """
    now = timezone.now()
    claimable = Job.objects.filter(pk=job_id, kind=Job.Kind.ROUND)
    claimed = claimable.filter(status=Job.Status.PENDING).update(
        status=Job.Status.RUNNING, message="Starting", updated_at=now
    ) or claimable.filter(status=Job.Status.RUNNING, updated_at__lt=now - stale_after()).update(
        message="Resuming after a stopped worker", updated_at=now
    )
    job = Job.objects.select_related("experiment").filter(pk=job_id).first()
    if job is None or not claimed:
        return job
    run = None
    try:
        run = _Round(job, on_progress)
        run.run()
    except Exception as exc:  # the job must end in a state the UI can show
        log.exception("round job %s failed", job_id)
        back = False
        if run is not None:
            try:  # no agent acted: the clock goes back (a half round is never left)
                back = run.close_failed()
            except Exception:
                log.exception("round job %s: the clock could not be set back", job_id)
        clock = f"; the clock stays at round {run.round - 1}" if back and run else ""
        message = f"Round failed{clock}: {_describe(exc)}"
        _update_job(job_id, status=Job.Status.FAILED, message=message)
        # Open pages hear that the round ended (they no longer poll while the stream is up).
        publish_progress(
            experiment_id=job.experiment_id,
            round_=run.round if run is not None else job.experiment.current_round,
            percent=100,
            message=message,
        )
    job = Job.objects.filter(pk=job_id).first()
    if continue_play and job is not None and job.status not in ACTIVE:
        _continue_play(job)
    return job


def _continue_play(round_job: Job) -> None:
    """Send on the play job parked on this (now ended) round, if there is one."""
    play = Job.objects.filter(
        experiment_id=round_job.experiment_id, kind=Job.Kind.PLAY, status=Job.Status.WAITING
    ).first()
    if play is not None and (play.result or {}).get("round_job") == str(round_job.pk):
        dispatch.send_on_commit("run_play", str(play.pk))
