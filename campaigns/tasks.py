"""Celery tasks: take ids, re-fetch, return quietly if the row is gone, call a service.

All tasks here are idempotent (running one twice changes nothing more), so they are
acknowledged late and may be redelivered after a worker crash. Arguments and results
are JSON. Time limits are explicit per task: the soft limit lands inside the model
call, where it counts as one more model failure and the deterministic fallback is
stored instead (so a slow provider costs quality, never a digest).
"""

from __future__ import annotations

import uuid

from celery import shared_task

from campaigns.models import Experiment, Job, LoreEntry, Turn, TurnRevision, VisibilityChange
from campaigns.services import arena, maintenance, memory, play, relay, transcripts, turn_fixes
from campaigns.services.dispatch import send_on_commit


@shared_task(acks_late=True, ignore_result=False)
def recount_turn_tokens(turn_id: int) -> int | None:
    """Recompute one turn's cached token count (after a tokenizer change, or an import)."""
    return maintenance.turn_recount_tokens(turn_id=turn_id)


@shared_task(acks_late=True, soft_time_limit=270, time_limit=300)
def index_turn_search(experiment_id: int) -> int:
    """Index an imported experiment's turns for search (searches see them meanwhile)."""
    return transcripts.index_imported_turns(experiment_id=experiment_id)


@shared_task(acks_late=True, soft_time_limit=50, time_limit=60)
def hydrate_turn(turn_id: int) -> dict | None:
    """World Bible candidates from one turn (rules only; definitions go to define_term)."""
    turn = Turn.objects.select_related("experiment").filter(pk=turn_id).first()
    if turn is None:
        return None
    return memory.hydrate_turn(turn=turn)


@shared_task(acks_late=True, soft_time_limit=150, time_limit=180)
def summarize_audience(
    experiment_id: int, audience: list[str] | None, round_to: int, force: bool = False
) -> dict | None:
    """Fold one audience's digest up to ``round_to`` when due (``force``: always).

    ``audience=None`` fans out: one task per current audience, so each gets the whole
    time limit and audiences run in parallel on several workers.
    """
    experiment = Experiment.objects.filter(pk=experiment_id).first()
    if experiment is None:
        return None
    if audience is None:
        targets = memory.audiences_for(experiment=experiment, round_to=round_to)
        for target in targets:
            send_on_commit("summarize_audience", experiment_id, list(target), round_to, force)
        return {"dispatched": [list(target) for target in targets]}
    created = memory.summarize_audience(
        experiment=experiment, audience=audience, round_to=round_to, force=force
    )
    return {"created": [summary.pk for summary in created]}


@shared_task(acks_late=True, soft_time_limit=100, time_limit=120)
def define_term(entry_id: int) -> str | None:
    """Ask the definer model for one entry's definition (first-use sentence stays on failure)."""
    entry = LoreEntry.objects.select_related("experiment").filter(pk=entry_id).first()
    if entry is None:
        return None
    return memory.define_term(entry=entry)


@shared_task(acks_late=True, soft_time_limit=840, time_limit=900)
def run_memory_job(job_id: str) -> str | None:
    """The body of /checkpoint and /compress: World Bible catch-up, then every digest."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return None
    return memory.memory_job_run(job=job).status


@shared_task(
    acks_late=True,
    soft_time_limit=relay.ROUND_SOFT_TIME_LIMIT,
    time_limit=relay.ROUND_TIME_LIMIT,
)
def run_round(job_id: str) -> str | None:
    """One relay round (SPEC §6), or its continuation after a human acted. Idempotent by
    the Job's claim (pending → running happens once; a redelivered message finds the Job
    claimed) and by each step's key (a step already stored is never stored again)."""
    if not Job.objects.filter(pk=job_id, kind=Job.Kind.ROUND).exists():
        return None
    job = relay.round_run(job_id=job_id)
    return None if job is None else job.status


@shared_task(acks_late=True, soft_time_limit=240, time_limit=300)
def human_timeout(job_id: str, round_: int, step: str, role: str) -> str | None:
    """Sent with ``countdown=config.human_timeout_s`` when a round starts waiting for a
    human. Idempotent: does nothing if they already acted (or the round moved on)."""
    if not Job.objects.filter(pk=job_id, kind=Job.Kind.ROUND).exists():
        return None
    return relay.human_timeout(job_id=job_id, round_=round_, step=step, role=role)


@shared_task(acks_late=True, soft_time_limit=1500, time_limit=1800)
def run_arena(job_id: str) -> str | None:
    """One Arena run (SPEC §5.7). Idempotent by the Job's claim and one ArenaRun per Job."""
    try:
        job_id = str(uuid.UUID(str(job_id)))
    except ValueError:
        return None  # not a job id at all: nothing to run
    job = Job.objects.filter(pk=job_id, kind=Job.Kind.ARENA).first()
    if job is None:
        return None
    return arena.arena_job_run(job=job).status


@shared_task(acks_late=True, soft_time_limit=50, time_limit=60)
def rehydrate_edit(revision_id: int) -> dict | None:
    """After a turn's text was edited: its World Bible evidence follows the new text."""
    revision = TurnRevision.objects.filter(pk=revision_id, turn__isnull=False).first()
    if revision is None:
        return None
    return memory.edit_rehydrate(revision=revision)


@shared_task(acks_late=True, soft_time_limit=150, time_limit=180)
def rederive_reveal(change_id: int) -> dict | None:
    """After a reveal: the new audience's World Bible and digests include the turn."""
    change = VisibilityChange.objects.select_related("turn", "experiment").filter(pk=change_id)
    change = change.first()
    if change is None:
        return None
    return memory.reveal_rederive(change=change)


@shared_task(
    acks_late=True, soft_time_limit=play.HOP_AFTER_S + 1740, time_limit=play.HOP_AFTER_S + 1800
)
def run_play(job_id: str) -> str | None:
    """ "Play N rounds": its rounds one after another (a long play hops to a fresh task).
    Idempotent by the Job's claim and the round it records before running it."""
    try:
        job_id = str(uuid.UUID(str(job_id)))
    except ValueError:
        return None
    if not Job.objects.filter(pk=job_id, kind=Job.Kind.PLAY).exists():
        return None
    job = play.play_run(job_id=job_id)
    return None if job is None else job.status


@shared_task(
    acks_late=True,
    soft_time_limit=relay.ROUND_SOFT_TIME_LIMIT,
    time_limit=relay.ROUND_TIME_LIMIT,
)
def run_regenerate(job_id: str) -> str | None:
    """A model's step asked again (issue 24 ask 4). Idempotent by the Job's claim: a
    redelivered message finds it claimed or finished and replaces nothing twice."""
    try:
        job_id = str(uuid.UUID(str(job_id)))
    except ValueError:
        return None
    job = turn_fixes.step_regenerate_run(job_id=job_id)
    return None if job is None else job.status


@shared_task(acks_late=True, soft_time_limit=840, time_limit=900)
def transcript_upload_run(upload_id: str) -> str | None:
    """Import a transcript uploaded in the console. Idempotent by the upload's claim (a
    redelivered task finds it no longer pending and changes nothing)."""
    try:
        upload_id = str(uuid.UUID(str(upload_id)))
    except ValueError:
        return None
    upload = transcripts.uploads.transcript_upload_run(upload_id=upload_id)
    return None if upload is None else upload.status
