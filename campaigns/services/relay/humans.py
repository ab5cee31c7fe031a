"""Humans at the table: who plays a seat, whom a round waits for, a human's post as
their step, and what happens when they do not act (`human_timeout`, `human_skip`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from campaigns.models import Experiment, Job, Participant, RoundStep, Turn
from campaigns.services.relay.common import HUMAN, _continue, _store_step_row
from campaigns.services.relay.runner import _Round
from campaigns.services.turns import may_move_clock, turn_create


def plays_seat(user, participant: Participant, experiment: Experiment) -> bool:
    """Whether ``user`` is the human at ``participant``'s seat: its linked user, or (no
    user linked) the experiment's owner or staff, who play unlinked seats."""
    if user is None or not getattr(user, "pk", None):
        return False
    if participant.user_id is not None:
        return participant.user_id == user.pk
    return bool(user.is_staff) or experiment.owner_id == user.pk


def waiting_for(experiment: Experiment) -> dict | None:
    """``{"role", "step", "round"}`` of the human the experiment's round waits for, or
    None. Roles are public (the cast list), so anyone in the experiment may be told."""
    job = (
        Job.objects.filter(experiment=experiment, kind=Job.Kind.ROUND, status=Job.Status.WAITING)
        .only("result")
        .first()
    )
    waiting = (job.result or {}).get("waiting") if job is not None else None
    if not waiting:
        return None
    return {key: waiting.get(key) for key in ("role", "step", "round")}


def human_turn_create(*, experiment: Experiment, user, **fields) -> Turn:
    """`turn_create` for a person (API, console): into the open round only unless ``user``
    may move the clock (`may_move_clock`, the one rule for every path). When the round
    waits for the role this user plays and the turn goes into that round, the turn is that
    human's step, and the round's continuation is dispatched after commit. Any other post
    is just a turn."""
    open_round_only = not may_move_clock(user=user, experiment=experiment)
    with transaction.atomic():
        turn = turn_create(experiment=experiment, open_round_only=open_round_only, **fields)
        _human_acted(turn=turn, user=user)
    return turn


def _human_acted(*, turn: Turn, user) -> Job | None:
    if turn.kind == Turn.Kind.SYSTEM:
        return None
    job = (
        Job.objects.select_for_update()
        .filter(experiment_id=turn.experiment_id, kind=Job.Kind.ROUND, status=Job.Status.WAITING)
        .first()
    )
    if job is None:
        return None
    waiting = job.result.get("waiting") or {}
    if waiting.get("role") != turn.speaker or waiting.get("round") != turn.round:
        return None
    participant = Participant.objects.filter(
        experiment_id=turn.experiment_id, role=turn.speaker
    ).first()
    if participant is None or participant.model != HUMAN:
        return None
    if not plays_seat(user, participant, turn.experiment):
        return None
    if not _store_step_row(
        experiment_id=turn.experiment_id,
        round_=turn.round,
        step=waiting["step"],
        speaker=turn.speaker,
        status=RoundStep.Status.OK,
        model=HUMAN,
        turns=[turn.pk],
        job_id=job.pk,
    ):
        return None
    _continue(job, f"{turn.speaker} acted; the round goes on")
    return job


def human_timeout(*, job_id, round_: int, step: str, role: str, now=None) -> str:
    """Apply the experiment's ``human_timeout_policy`` to a human who did not act.

    Idempotent: does nothing (and says why) unless the Job still waits for exactly this
    step, its timeout has passed, and the step is not stored.
    """
    job = Job.objects.select_related("experiment").filter(pk=job_id).first()
    if job is None or job.status != Job.Status.WAITING:
        return "not waiting"
    waiting = job.result.get("waiting") or {}
    if (waiting.get("round"), waiting.get("step"), waiting.get("role")) != (round_, step, role):
        return "waiting for another step"
    seconds = waiting.get("timeout_s")
    since = waiting.get("since")
    if not seconds or not since:
        return "no timeout"
    now = now or timezone.now()
    if now < datetime.fromisoformat(since) + timedelta(seconds=seconds):
        return "not yet"
    if RoundStep.objects.filter(
        experiment=job.experiment, round=round_, step=step, speaker=role
    ).exists():
        return "already acted"
    return _Round(job, None).time_out(step=step, role=role, seconds=seconds)


def human_skip(*, experiment: Experiment, job: Job) -> str:
    """The DM side moves on without the human the round waits for (they are away): the
    experiment's ``human_timeout_policy`` applies at once, as on a timeout. A round that
    no longer waits is a ValidationError; the skip is stored once, like any step."""
    if job.experiment_id != experiment.pk or job.kind != Job.Kind.ROUND:
        raise ValidationError({"job": ["No such round in this campaign."]})
    job.refresh_from_db()
    waiting = (job.result or {}).get("waiting") or {}
    if job.status != Job.Status.WAITING or not waiting.get("role"):
        raise ValidationError({"job": ["This round is not waiting for anyone."]})
    done = _Round(job, None).time_out(
        step=waiting["step"], role=waiting["role"], seconds=None, skipped=True
    )
    if done in ("failed", "no such role"):
        raise ValidationError({"job": [f"Could not skip {waiting['role']} ({done})."]})
    return done
