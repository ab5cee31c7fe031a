"""The relay (SPEC §6): run one round of the campaign, agent by agent.

A round: the DM narrates, each player acts in ``order``, then the DM answers the
whispers it received this round (skipped when there are none). Each step builds the
speaker's pack (`pack_for_role`, input = `step_instruction`), calls its model through the
one messages builder with retries on transient errors, parses the answer
(`context_engine.agent_output`) and stores the turns with `turn_create`, which also
dispatches the memory work (hydrator, summarizer) after commit.

Guarantees:

- One transaction per step: a step's turns and its record on the Job commit together or
  not at all, so a failed call or a failed write never leaves half a step stored. The
  model is called outside any transaction: no lock is held while a model thinks.
- A step whose model fails (after retries on timeouts, 429 and 5xx; at once on other
  errors) or whose turns cannot be stored is **recorded, not skipped silently**: a
  ``system`` turn visible to the DM roles says which agent failed and why, and the round
  goes on with the next agent. Turns already stored are never touched.
- The Job ends ``succeeded`` when at least one agent step stored its turns, ``failed``
  (with the last error) when no agent could act; its ``result`` lists every step.
- Humans (model ``human``) are skipped: they post their own turns.
- One round at a time per experiment: `round_start` takes the experiment's row lock
  (the lock `turn_create` takes) before looking for an active round job, so two
  concurrent starts serialise and the second gets a ValidationError. A round job whose
  worker died (no progress for longer than the task's hard time limit) stops blocking.
- `round_run` claims its Job with a conditional UPDATE (pending → running): a redelivered
  or duplicated task finds it claimed and returns without running the round again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.utils import timezone

from campaigns.adapters import llm_settings
from campaigns.models import Experiment, Job, Participant, Turn
from campaigns.services.context import pack_for_role
from campaigns.services.relay_tools import answer_with_memory
from campaigns.services.reveals import secrets_reveal_due
from campaigns.services.turns import turn_create
from campaigns.services.validation import max_content_chars
from context_engine.agent_output import ParsedTurn, parse_agent_output
from context_engine.llm import LLMError, call_with_retries, client_for, is_offline
from context_engine.relay import ACT, ANSWER, NARRATE, OfflineAgent, Step, step_instruction
from context_engine.render import to_openai_messages
from context_engine.visibility import parse_stored_visibility

log = logging.getLogger(__name__)

HUMAN = "human"
RETRY_ATTEMPTS = 3
ROUND_SOFT_TIME_LIMIT = 1740  # seconds; the task's limits (see campaigns.tasks.run_round)
ROUND_TIME_LIMIT = 1800
STALE_AFTER = timedelta(seconds=ROUND_TIME_LIMIT)  # no progress this long: the worker died
ALREADY_RUNNING = "A round is already running."
ERROR_CHARS = 300

ProgressCallback = Callable[[int, str], None]


def _sleep(seconds: float) -> None:
    """Backoff between model retries (a module attribute so tests can watch it)."""
    time.sleep(seconds)


def _retry_base_delay() -> float:
    return float(settings.BABEL_LLM_RETRY_BASE_DELAY)


# -- starting a round --------------------------------------------------------------------


def _active_rounds(experiment: Experiment):
    return Job.objects.filter(
        experiment=experiment,
        kind=Job.Kind.ROUND,
        status__in=[Job.Status.PENDING, Job.Status.RUNNING],
    )


def _round_running(experiment: Experiment) -> bool:
    """Whether a round job of this experiment is pending or running. Call it holding the
    experiment's row lock, and create the next job under the same lock."""
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


@transaction.atomic
def round_create(*, experiment: Experiment, user=None) -> Job:
    """The pending Job of the next round, unless one is already pending or running.

    Raises ValidationError ``{"round": [...]}``. Does not dispatch: `round_start` does,
    and ``manage.py run_campaign`` runs it in-process with `round_run`.
    """
    locked = Experiment.objects.select_for_update().get(pk=experiment.pk)
    _check_cast(locked)
    if locked.current_round >= settings.BABEL_MAX_ROUND:
        raise ValidationError(
            {"round": [f"The campaign is at its last round ({settings.BABEL_MAX_ROUND})."]}
        )
    now = timezone.now()
    _active_rounds(locked).filter(updated_at__lt=now - STALE_AFTER).update(
        status=Job.Status.FAILED,
        message="Abandoned: no progress for longer than a round may take (the worker stopped).",
        updated_at=now,
    )
    if _round_running(locked):
        raise ValidationError({"round": [ALREADY_RUNNING]})
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


def round_start(*, experiment: Experiment, user=None) -> Job:
    """Start the next round in the background and return its Job (SPEC §8 rounds).

    The task is sent after commit. With no ``REDIS_URL`` Celery runs it eagerly, so this
    returns once the round is over (the Job re-read, its status final).
    """
    with transaction.atomic():
        job = round_create(experiment=experiment, user=user)
        transaction.on_commit(partial(_dispatch, str(job.pk)))
    if not connection.in_atomic_block:
        job.refresh_from_db()
    return job


# -- running a round ---------------------------------------------------------------------


def _update_job(job_id, **fields) -> None:
    if "message" in fields:
        fields["message"] = fields["message"][:500]
    Job.objects.filter(pk=job_id).update(updated_at=timezone.now(), **fields)


def round_run(*, job_id, on_progress: ProgressCallback | None = None) -> Job | None:
    """Run the round of a pending Job to the end. Never raises for a model or a step:
    failures are on the Job and in DM-only system turns.

    Returns the Job (``None`` if it no longer exists). A Job that is not pending (already
    claimed, finished) is returned untouched: running this twice runs the round once.
    """
    claimed = Job.objects.filter(pk=job_id, kind=Job.Kind.ROUND, status=Job.Status.PENDING).update(
        status=Job.Status.RUNNING, progress=0, message="Starting", updated_at=timezone.now()
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
        self.round = self.experiment.current_round + 1
        self.result: dict = {"round": self.round, "steps": []}
        self.content_limit = max_content_chars(self.experiment.config)

    # progress ---------------------------------------------------------------------
    def _report(self, percent: int, message: str, **fields) -> None:
        _update_job(self.job.pk, progress=percent, message=message, **fields)
        if self.callback is not None:
            self.callback(percent, message)

    # the round --------------------------------------------------------------------
    def run(self) -> None:
        if self.dm is None:
            raise _StepFailed("The experiment has no DM participant.")
        playing = tuple(p.role for p in self.players if p.model != HUMAN)
        plan: list[tuple[str, Participant]] = [(NARRATE, self.dm)]
        plan += [(ACT, player) for player in self.players]
        plan.append((ANSWER, self.dm))
        total = len(plan)
        # A round start opens the round: every pack of this round reads the new clock.
        if Experiment.objects.filter(pk=self.experiment.pk, current_round__lt=self.round).update(
            current_round=self.round
        ):
            secrets_reveal_due(experiment_id=self.experiment.pk, round_now=self.round)
        self.experiment.current_round = self.round
        _update_job(self.job.pk, result=self.result)
        for index, (kind, participant) in enumerate(plan):
            step = Step(
                kind=kind,
                role=participant.role,
                speaker_kind=participant.kind,
                round=self.round,
                dm_role=self.dm.role,
                players=playing,
                whisperers=self._whisperers() if kind == ANSWER else (),
            )
            self._report(min(99, 100 * index // total), f"Round {self.round}: {step.label}")
            self._step(step, participant)
        self._finish()

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
        steps = self.result["steps"]
        done = [s for s in steps if s["status"] == "ok"]
        failed = [s for s in steps if s["status"] == "failed"]
        stored = sum(len(s["turns"]) for s in done)
        if not done:
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
        self._report(100, message, status=Job.Status.SUCCEEDED, result=self.result)

    # one step ---------------------------------------------------------------------
    def _record(self, step: Step, participant: Participant, status: str, **extra) -> dict:
        entry = {
            "step": step.kind,
            "role": step.role,
            "model": participant.model,
            "status": status,
            "turns": [],
            **extra,
        }
        self.result["steps"].append(entry)
        return entry

    def _step(self, step: Step, participant: Participant) -> None:
        if participant.model == HUMAN:
            self._record(step, participant, "skipped", reason="played by a human")
            _update_job(self.job.pk, result=self.result)
            return
        if step.kind == ANSWER and not step.whisperers:
            self._record(step, participant, "skipped", reason="no whispers to answer")
            _update_job(self.job.pk, result=self.result)
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
            text=self._call(client, pack, step),
            rebuild=lambda note: pack_for_role(
                experiment=self.experiment, role=role, input_text=f"{instruction}\n\n{note}"
            ),
            ask=lambda again: self._call(client, again, step, looked_up=True),
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

    def _call(self, client, pack, step: Step, *, looked_up: bool = False) -> str:
        """One model call (with retries) for ``pack``; the offline agent answers locally."""
        if is_offline(client):
            tools = bool((self.experiment.config or {}).get("offline_agent_tools"))
            return OfflineAgent(tools=tools).respond(pack, step, looked_up=looked_up)
        messages = to_openai_messages(pack)
        try:
            return call_with_retries(
                lambda: client.complete(messages),
                attempts=RETRY_ATTEMPTS,
                base_delay=_retry_base_delay(),
                sleep=_sleep,
            )
        except LLMError as exc:
            raise _StepFailed(f"{type(exc).__name__}: {_describe(exc)}") from exc

    def _clip(self, content: str) -> str:
        """Content over the experiment's limit is cut, saying so (never a failed write)."""
        if len(content) <= self.content_limit:
            return content
        note = f"\n[cut by the relay: {len(content) - self.content_limit} characters over]"
        keep = max(0, self.content_limit - len(note))
        return (content[:keep] + note)[: self.content_limit]

    def _store(self, step: Step, participant: Participant, parsed: list[ParsedTurn]) -> None:
        entry = self._record(step, participant, "ok")
        try:
            with transaction.atomic():
                for item in parsed:
                    turn = turn_create(
                        experiment=self.experiment,
                        round=self.round,
                        speaker=participant.role,
                        kind=item.kind,
                        content=self._clip(item.content),
                        visibility=list(item.visibility) if item.visibility is not None else None,
                        tags=list(item.tags),
                        hinge=item.hinge,
                        needs_review=item.needs_review,
                    )
                    entry["turns"].append(turn.pk)
                entry["review"] = sum(1 for item in parsed if item.needs_review)
                _update_job(self.job.pk, result=self.result)
        except (ValidationError, DatabaseError) as exc:
            self.result["steps"].pop()
            raise _StepFailed(
                f"its answer could not be stored ({type(exc).__name__}: {_describe(exc)})"
            ) from exc

    def _store_failure(self, step: Step, participant: Participant, reason: str) -> None:
        """A DM-only system turn saying the agent failed; the round goes on."""
        entry = self._record(step, participant, "failed", error=reason)
        note = (
            f"Relay: {participant.role}'s step ({step.kind}, model {participant.model}) failed "
            f"and was skipped this round: {reason}"
        )
        with transaction.atomic():
            turn = turn_create(
                experiment=self.experiment,
                round=self.round,
                speaker=self.dm.role,
                kind=Turn.Kind.SYSTEM,
                content=self._clip(note),
                visibility=list(self.dm_roles),
            )
            entry["turns"].append(turn.pk)
            _update_job(self.job.pk, result=self.result)
