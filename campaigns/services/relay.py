"""The relay (SPEC §6): run one round of the campaign, agent by agent.

A round: the DM narrates, each player acts in ``order``, then the DM answers the
whispers it received this round (skipped when there are none). Each step builds the
speaker's pack (`pack_for_role`, input = `step_instruction`), calls its model through the
one messages builder with retries on transient errors, parses the answer
(`context_engine.agent_output`) and stores the turns with `turn_create`, which also
dispatches the memory work (hydrator, summarizer) after commit.

Guarantees:

- Every step has an idempotency key ``(experiment, round, step, speaker)``: a `RoundStep`
  row committed in the same transaction as the step's turns and the Job's record of it.
  A second commit of the same step fails on the key's unique constraint and stores
  nothing, so re-running a round (a redelivered task, a resumed round racing a slow
  worker) resumes from the first step with no row: no turn duplicated or lost, even if
  a worker died between the model call and the commit. The model is called outside any
  transaction: no lock is held while a model thinks.
- A step whose model fails (after retries on timeouts, 429 and 5xx; at once on other
  errors) or whose turns cannot be stored is **recorded, not skipped silently**: a
  ``system`` turn visible to the DM roles says which agent failed and why, and the round
  goes on with the next agent. Turns already stored are never touched.
- Humans (model ``human``) take their own turn. When the round reaches a human's step
  the Job goes ``waiting`` ("waiting for ROLE") and the task returns, freeing the worker.
  That human's post into the open round (`human_turn_create`, API or console) stores the
  step and dispatches the continuation. ``config.human_timeout_s`` schedules
  `human_timeout`; ``config.human_timeout_policy`` says what happens then: ``skip`` (a
  DM-only system note says ROLE did not act) or ``narrate`` (the DM's model narrates the
  hesitation; a human DM gets the note). Whichever comes first stores the step; the other
  finds the key taken and does nothing.
- The Job ends ``succeeded`` when at least one step stored its turns, ``failed`` (with
  the last error) when none could; its ``result`` lists every step.
- One round at a time per experiment: `round_create` takes the experiment's row lock
  (the lock `turn_create` takes) before looking for an active round job (pending,
  running or waiting), so two concurrent starts serialise and the second gets a
  ValidationError.
- A round whose worker died resumes: a pending or running Job with no progress for
  ``BABEL_ROUND_STALE_S`` seconds (default: the task's hard time limit, longer than any
  live run can go quiet) is picked up again by `round_start` (the "Run round" button or
  ``POST /rounds/``, which then returns that Job) and by a redelivered task.
- `round_run` claims its Job with a conditional UPDATE (pending, or stale running →
  running): a duplicated task finds it claimed and returns without running the round.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from campaigns.adapters import llm_settings
from campaigns.models import Experiment, Job, Participant, RoundStep, Turn
from campaigns.selectors_usage import usage_summary
from campaigns.services.context import pack_for_role
from campaigns.services.relay_tools import answer_with_memory
from campaigns.services.reveals import secrets_reveal_due
from campaigns.services.turns import turn_create
from campaigns.services.usage import (
    model_call_complete,
    model_call_note,
    participant_options,
    step_key,
)
from campaigns.services.validation import max_content_chars
from context_engine.agent_output import ParsedTurn, parse_agent_output
from context_engine.llm import LLMError, call_with_retries, client_for, is_offline, offline_usage
from context_engine.relay import (
    ACT,
    ANSWER,
    HESITATE,
    NARRATE,
    OfflineAgent,
    Step,
    step_instruction,
)
from context_engine.render import frozen_prefix, to_openai_messages
from context_engine.visibility import parse_stored_visibility

log = logging.getLogger(__name__)

HUMAN = "human"
RETRY_ATTEMPTS = 3
ROUND_SOFT_TIME_LIMIT = 1740  # seconds; the task's limits (see campaigns.tasks.run_round)
ROUND_TIME_LIMIT = 1800
ALREADY_RUNNING = "A round is already running."
WAITING_FOR = "The round is waiting for "
ERROR_CHARS = 300
ACTIVE = (Job.Status.PENDING, Job.Status.RUNNING, Job.Status.WAITING)

ProgressCallback = Callable[[int, str], None]


def _sleep(seconds: float) -> None:
    """Backoff between model retries (a module attribute so tests can watch it)."""
    time.sleep(seconds)


def _retry_base_delay() -> float:
    return float(settings.BABEL_LLM_RETRY_BASE_DELAY)


def stale_after() -> timedelta:
    """No progress this long on a pending or running round: its worker died."""
    return timedelta(seconds=float(getattr(settings, "BABEL_ROUND_STALE_S", ROUND_TIME_LIMIT)))


# -- starting a round --------------------------------------------------------------------


def _active_rounds(experiment: Experiment):
    return Job.objects.filter(experiment=experiment, kind=Job.Kind.ROUND, status__in=ACTIVE)


def _round_running(experiment: Experiment) -> bool:
    """Whether a round job of this experiment is pending, running or waiting. Call it
    holding the experiment's row lock, and create the next job under the same lock."""
    return _active_rounds(experiment).exists()


def _check_cast(experiment: Experiment) -> None:
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
def round_create(*, experiment: Experiment, user=None) -> Job:
    """The pending Job of the next round, unless one is already pending, running or
    waiting. A round whose worker died (see `stale_after`) is returned instead, pending
    again, to be resumed.

    Raises ValidationError ``{"round": [...]}``. Does not dispatch: `round_start` does,
    and ``manage.py run_campaign`` runs it in-process with `round_run`.
    """
    locked = Experiment.objects.select_for_update().get(pk=experiment.pk)
    _check_cast(locked)
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
            return Job.objects.create(
                experiment=locked,
                kind=Job.Kind.ROUND,
                user=user if getattr(user, "pk", None) else None,
                message="Waiting for a worker",
                result={},
            )
    except IntegrityError:
        raise ValidationError({"round": [ALREADY_RUNNING]}) from None


def _dispatch(job_id: str) -> None:
    from campaigns import tasks  # tasks import the services: import lazily

    tasks.run_round.delay(job_id)


def _dispatch_timeout(job_id: str, round_: int, step: str, role: str, seconds: int) -> None:
    from campaigns import tasks

    if tasks.run_round.app.conf.task_always_eager:
        # No broker, no clock: an eager "countdown" would fire now. Without a worker the
        # round waits for the human (or `human_timeout` called by hand).
        return
    tasks.human_timeout.apply_async((job_id, round_, step, role), countdown=seconds)


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


# -- humans ------------------------------------------------------------------------------


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
    """`turn_create` for a person (API, console): when the round waits for the role this
    user plays and the turn goes into that round, the turn is that human's step, and the
    round's continuation is dispatched after commit. Any other post is just a turn."""
    with transaction.atomic():
        turn = turn_create(experiment=experiment, **fields)
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


# -- running a round ---------------------------------------------------------------------


def _update_job(job_id, **fields) -> None:
    if "message" in fields:
        fields["message"] = fields["message"][:500]
    Job.objects.filter(pk=job_id).update(updated_at=timezone.now(), **fields)


def round_run(*, job_id, on_progress: ProgressCallback | None = None) -> Job | None:
    """Run the round of a pending Job until it ends or waits for a human. Never raises
    for a model or a step: failures are on the Job and in DM-only system turns.

    Returns the Job (``None`` if it no longer exists). A Job that is not pending (already
    claimed, waiting, finished) is returned untouched, unless it is running with no
    progress for `stale_after` (its worker died): then it is claimed and resumed.
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
    try:
        _Round(job, on_progress).run()
    except Exception as exc:  # the job must end in a state the UI can show
        log.exception("round job %s failed", job_id)
        _update_job(job_id, status=Job.Status.FAILED, message=f"Round failed: {_describe(exc)}")
    return Job.objects.filter(pk=job_id).first()


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, ValidationError):
        text = "; ".join(exc.messages)
    return " ".join(text.split())[:ERROR_CHARS]


class _StepFailed(Exception):
    """A step could not produce stored turns; the message says why (for the DM)."""


class _Round:
    """The state of one round run: its Job, its cast, its steps."""

    def __init__(self, job: Job, progress: ProgressCallback | None):
        self.job = job
        self.experiment: Experiment = job.experiment
        self.callback = progress
        participants = list(self.experiment.participants.all())  # ordered by order, id
        self.roles = frozenset(p.role for p in participants)
        dms = [p for p in participants if p.kind == Participant.Kind.DM]
        self.dm_roles = tuple(sorted(p.role for p in dms))
        self.dm = dms[0] if dms else None
        self.players = [p for p in participants if p.kind == Participant.Kind.PLAYER]
        self.by_role = {p.role: p for p in participants}
        opened = (job.result or {}).get("round")
        self.round = opened if isinstance(opened, int) else self.experiment.current_round + 1
        self.result: dict = {"round": self.round, "steps": []}
        self.content_limit = max_content_chars(self.experiment.config)

    # progress ---------------------------------------------------------------------
    def _report(self, percent: int, message: str, **fields) -> None:
        _update_job(self.job.pk, progress=percent, message=message, **fields)
        if self.callback is not None:
            self.callback(percent, message)

    # the round --------------------------------------------------------------------
    def _plan(self) -> list[tuple[str, Participant]]:
        plan: list[tuple[str, Participant]] = [(NARRATE, self.dm)]
        plan += [(ACT, player) for player in self.players]
        plan.append((ANSWER, self.dm))
        return plan

    def _open(self) -> None:
        """A round start opens the round: every pack of this round reads the new clock.
        The Job records the round in the same transaction, so a resumed run plays the
        same round."""
        with transaction.atomic():
            opened = Experiment.objects.filter(
                pk=self.experiment.pk, current_round__lt=self.round
            ).update(current_round=self.round)
            if opened:  # secrets whose reveal round has now passed are revealed once
                secrets_reveal_due(experiment_id=self.experiment.pk, round_now=self.round)
            _update_job(self.job.pk, result=self.result)
        self.experiment.current_round = max(self.experiment.current_round, self.round)

    def _stored(self) -> dict[tuple[str, str], RoundStep]:
        rows = RoundStep.objects.filter(experiment=self.experiment, round=self.round)
        return {(row.step, row.speaker): row for row in rows}

    def _step_for(self, kind: str, participant: Participant) -> Step:
        return Step(
            kind=kind,
            role=participant.role,
            speaker_kind=participant.kind,
            round=self.round,
            dm_role=self.dm.role,
            players=tuple(p.role for p in self.players),
            whisperers=self._whisperers() if kind == ANSWER else (),
        )

    def run(self) -> None:
        if self.dm is None:
            raise _StepFailed("The experiment has no DM participant.")
        self._open()
        plan = self._plan()
        total = len(plan)
        for index, (kind, participant) in enumerate(plan):
            row = self._stored().get((kind, participant.role))
            if row is not None:  # stored by an earlier run, a human or a timeout
                self.result["steps"].append(row.as_result())
                continue
            step = self._step_for(kind, participant)
            percent = min(99, 100 * index // total)
            if participant.model == HUMAN and not (kind == ANSWER and not step.whisperers):
                if self._wait(step, participant, percent):
                    return  # the human's post (or the timeout) dispatches the rest
                self.result["steps"].append(self._stored()[(kind, participant.role)].as_result())
                continue
            self._report(percent, f"Round {self.round}: {step.label}")
            self._step(step, participant)
        self._finish()

    def _wait(self, step: Step, participant: Participant, percent: int) -> bool:
        """Park the round on a human's step: True once the Job waits for them; False if
        they had already posted in this round since the previous step (that post is
        their step, stored now). Both this and a human's post hold the experiment's row
        lock, so a post lands either before (found here) or after (resumes the Job)."""
        config = self.experiment.config or {}
        seconds = config.get("human_timeout_s")
        with transaction.atomic():
            Experiment.objects.select_for_update().get(pk=self.experiment.pk)
            early = self._early_post(step.role)
            if early:
                _store_step_row(
                    experiment_id=self.experiment.pk,
                    round_=self.round,
                    step=step.kind,
                    speaker=step.role,
                    status=RoundStep.Status.OK,
                    model=HUMAN,
                    turns=early,
                    job_id=self.job.pk,
                )
                return False  # stored now, or by a concurrent run: either way, go on
            self.result["waiting"] = {
                "round": self.round,
                "step": step.kind,
                "role": step.role,
                "since": timezone.now().isoformat(),
                "timeout_s": seconds if isinstance(seconds, int) else None,
                "policy": config.get("human_timeout_policy", "skip"),
            }
            self._report(
                percent,
                f"Round {self.round}: waiting for {step.role}",
                status=Job.Status.WAITING,
                result=self.result,
            )
            if isinstance(seconds, int):
                transaction.on_commit(
                    partial(
                        _dispatch_timeout,
                        str(self.job.pk),
                        self.round,
                        step.kind,
                        step.role,
                        seconds,
                    )
                )
        return True

    def _early_post(self, role: str) -> list[int]:
        """Turns ``role`` posted in this round after every stored step's turns (system
        notes aside): a human who acted before the round reached them."""
        claimed = [pk for row in self._stored().values() for pk in row.turns]
        after = 0
        if claimed:
            last = Turn.objects.filter(pk__in=claimed).order_by("-seq").first()
            after = last.seq if last is not None else 0
        turns = Turn.objects.filter(
            experiment=self.experiment, round=self.round, speaker=role, seq__gt=after
        ).exclude(kind=Turn.Kind.SYSTEM)
        return list(turns.order_by("seq").values_list("pk", flat=True))

    def _whisperers(self) -> tuple[str, ...]:
        """Players who whispered to a DM this round, in turn order."""
        whispers = Turn.objects.filter(
            experiment=self.experiment, round=self.round, kind=Turn.Kind.WHISPER
        ).exclude(speaker__in=self.dm_roles)
        sent = set()
        for turn in whispers.only("speaker", "visibility"):
            audience = parse_stored_visibility(turn.visibility, self.dm_roles) or ()
            if set(audience) & set(self.dm_roles):
                sent.add(turn.speaker)
        return tuple(p.role for p in self.players if p.role in sent)

    def _finish(self) -> None:
        self.result["usage"] = usage_summary(experiment=self.experiment, round=self.round)
        steps = self.result["steps"]
        done = [s for s in steps if s["status"] in ("ok", "timed_out")]
        failed = [s for s in steps if s["status"] == "failed"]
        stored = sum(len(s["turns"]) for s in done)
        if not [s for s in done if s["status"] == "ok"]:
            last = failed[-1]["error"] if failed else "no agent could act"
            self._report(
                100,
                f"Round {self.round} failed: no agent could act. Last error: {last}",
                status=Job.Status.FAILED,
                result=self.result,
            )
            return
        message = f"Round {self.round} done: {stored} turn(s) from {len(done)} step(s)"
        if failed:
            message += "; failed: " + ", ".join(f"{s['role']} ({s['step']})" for s in failed)
        late = [s["role"] for s in steps if s["status"] == "timed_out"]
        if late:
            message += "; did not act in time: " + ", ".join(late)
        self._report(100, message, status=Job.Status.SUCCEEDED, result=self.result)

    # one step ---------------------------------------------------------------------
    def _commit(
        self,
        step: Step,
        participant: Participant,
        status: str,
        write=None,
        *,
        key_role: str | None = None,
        **detail,
    ) -> bool:
        """Commit one step: its key row, its turns (``write()`` returns their ids) and the
        Job's record, in one transaction. False, with nothing stored, when the key is
        already taken (another run stored this step first)."""
        role = key_role or step.role
        try:
            with transaction.atomic():
                Experiment.objects.select_for_update().get(pk=self.experiment.pk)
                if RoundStep.objects.filter(
                    experiment=self.experiment, round=self.round, step=step.kind, speaker=role
                ).exists():
                    return False
                row = RoundStep.objects.create(
                    experiment=self.experiment,
                    round=self.round,
                    step=step.kind,
                    speaker=role,
                    status=status,
                    model=participant.model,
                    detail=detail,
                    job_id=self.job.pk,
                )
                row.turns = write() if write is not None else []
                row.save(update_fields=["turns"])
                self.result["steps"].append(row.as_result())
                try:
                    _update_job(self.job.pk, result=self.result)
                except BaseException:
                    self.result["steps"].pop()
                    raise
        except IntegrityError:
            if RoundStep.objects.filter(
                experiment=self.experiment, round=self.round, step=step.kind, speaker=role
            ).exists():
                return False
            raise
        return True

    def _step(self, step: Step, participant: Participant) -> None:
        if step.kind == ANSWER and not step.whisperers:
            self._commit(
                step, participant, RoundStep.Status.SKIPPED, reason="no whispers to answer"
            )
            return
        try:
            parsed = self._ask(step, participant)
            self._store(step, participant, parsed)
        except _StepFailed as exc:
            self._store_failure(step, participant, str(exc))

    def _ask(self, step: Step, participant: Participant) -> list[ParsedTurn]:
        """Build the pack, call the model (with retries), parse. Outside any transaction."""
        instruction = step_instruction(step)
        role = participant.role
        pack = pack_for_role(experiment=self.experiment, role=role, input_text=instruction)
        try:
            client = client_for(participant.model, llm_settings())
        except ValueError as exc:
            raise _StepFailed(_describe(exc)) from exc
        # The memory tool (relay_tools): lookup lines run as this role, then one more call.
        answer = answer_with_memory(
            experiment=self.experiment,
            role=role,
            text=self._call(client, pack, step, participant),
            rebuild=lambda note: pack_for_role(
                experiment=self.experiment, role=role, input_text=f"{instruction}\n\n{note}"
            ),
            ask=lambda again: self._call(client, again, step, participant, looked_up=True),
        )
        parsed = parse_agent_output(
            answer.text,
            speaker=participant.role,
            speaker_kind=participant.kind,
            roles=self.roles,
            dm_roles=self.dm_roles,
        )
        if not parsed:
            raise _StepFailed("the model answered with no text")
        return parsed

    def _call(
        self, client, pack, step: Step, participant: Participant, *, looked_up: bool = False
    ) -> str:
        """One model call (with retries) for ``pack``, its usage recorded (`ModelCall`);
        the offline agent answers locally. The call after a memory lookup is keyed apart."""
        messages = to_openai_messages(pack)
        if is_offline(client):
            tools = bool((self.experiment.config or {}).get("offline_agent_tools"))
            text = OfflineAgent(tools=tools).respond(pack, step, looked_up=looked_up)
            used = offline_usage(messages, text)
        else:
            retry = partial(
                call_with_retries,
                attempts=RETRY_ATTEMPTS,
                base_delay=_retry_base_delay(),
                sleep=_sleep,
            )
            try:
                completion = model_call_complete(
                    experiment=self.experiment,
                    role=participant.role,
                    client=client,
                    messages=messages,
                    options=participant_options(participant),
                    frozen_prefix=frozen_prefix(pack),
                    retry=retry,
                )
            except LLMError as exc:
                raise _StepFailed(f"{type(exc).__name__}: {_describe(exc)}") from exc
            text, used = completion.text, completion.usage
        key = step_key(round=self.round, step=step.kind, role=participant.role)
        model_call_note(
            experiment=self.experiment,
            job=self.job,
            key=f"{key}:lookup" if looked_up else key,
            round=self.round,
            role=participant.role,
            step=step.kind,
            model=participant.model,
            messages=messages,
            usage=used,
        )
        return text

    def _clip(self, content: str) -> str:
        """Content over the experiment's limit is cut, saying so (never a failed write)."""
        if len(content) <= self.content_limit:
            return content
        note = f"\n[cut by the relay: {len(content) - self.content_limit} characters over]"
        keep = max(0, self.content_limit - len(note))
        return (content[:keep] + note)[: self.content_limit]

    def _write_parsed(self, participant: Participant, parsed: list[ParsedTurn]):
        def write() -> list[int]:
            return [
                turn_create(
                    experiment=self.experiment,
                    round=self.round,
                    speaker=participant.role,
                    kind=item.kind,
                    content=self._clip(item.content),
                    visibility=list(item.visibility) if item.visibility is not None else None,
                    tags=list(item.tags),
                    hinge=item.hinge,
                    needs_review=item.needs_review,
                ).pk
                for item in parsed
            ]

        return write

    def _store(self, step: Step, participant: Participant, parsed: list[ParsedTurn]) -> None:
        review = sum(1 for item in parsed if item.needs_review)
        try:
            self._commit(
                step,
                participant,
                RoundStep.Status.OK,
                self._write_parsed(participant, parsed),
                review=review,
            )
        except (ValidationError, DatabaseError) as exc:
            raise _StepFailed(
                f"its answer could not be stored ({type(exc).__name__}: {_describe(exc)})"
            ) from exc

    def _note(self, text: str):
        def write() -> list[int]:
            turn = turn_create(
                experiment=self.experiment,
                round=self.round,
                speaker=self.dm.role,
                kind=Turn.Kind.SYSTEM,
                content=self._clip(text),
                visibility=list(self.dm_roles),
            )
            return [turn.pk]

        return write

    def _store_failure(self, step: Step, participant: Participant, reason: str) -> None:
        """A DM-only system turn saying the agent failed; the round goes on."""
        note = (
            f"Relay: {participant.role}'s step ({step.kind}, model {participant.model}) failed "
            f"and was skipped this round: {reason}"
        )
        self._commit(step, participant, RoundStep.Status.FAILED, self._note(note), error=reason)

    # a human who did not act ------------------------------------------------------
    def time_out(self, *, step: str, role: str, seconds: int | None, skipped: bool = False) -> str:
        """Store the human's step as timed out (a note, or the DM's narration of the
        hesitation) and send the round on; ``skipped``: the DM side moved on at once.
        Returns what was done."""
        participant = self.by_role.get(role)
        if participant is None or self.dm is None:
            return "no such role"
        policy = (self.experiment.config or {}).get("human_timeout_policy", "skip")
        human_step = Step(kind=step, role=role, speaker_kind=participant.kind, round=self.round)
        write = None
        done = "skipped"
        if policy == "narrate" and self.dm.model != HUMAN:
            hesitate = Step(
                kind=HESITATE,
                role=self.dm.role,
                speaker_kind=self.dm.kind,
                round=self.round,
                dm_role=self.dm.role,
                players=tuple(p.role for p in self.players),
                absent=role,
            )
            try:
                parsed = self._ask(hesitate, self.dm)
                write = self._write_parsed(self.dm, parsed)
                done = "narrated"
            except _StepFailed as exc:
                log.warning("the DM could not narrate %s's hesitation: %s", role, exc)
        if write is None:
            why = "was skipped by the DM" if skipped else f"did not act within {seconds} s"
            write = self._note(
                f"Relay: {role} {why} in round {self.round} "
                f"({step}); the round went on without them."
            )
        self.result = dict(self.job.result or {})
        self.result.setdefault("steps", [])
        try:
            with transaction.atomic():
                stored = self._commit(
                    human_step,
                    participant,
                    RoundStep.Status.TIMED_OUT,
                    write,
                    policy=policy,
                    outcome=done,
                )
                if stored:
                    why = "was skipped" if skipped else "did not act in time"
                    _continue(self.job, f"{role} {why} ({done}); the round goes on")
        except (ValidationError, DatabaseError) as exc:
            log.warning("could not store %s's timeout: %s", role, exc)
            return "failed"
        return done if stored else "already acted"
