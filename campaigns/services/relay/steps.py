"""The step machinery of a round run (`_Steps`, the base of `_Round`): its state, asking
a model (the pack, retries on transient errors, the memory tool, parsing), and storing a
step: its turns, its `RoundStep` key row and the Job's record in one transaction, or a
DM-only note when the agent failed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, transaction

from campaigns.models import Experiment, Job, ModelCall, Participant, RoundStep, Turn
from campaigns.services.context import pack_for_role
from campaigns.services.holds import turn_hold
from campaigns.services.output_guard import PASS, OutputGuard, Verdict, wider_than_speaker
from campaigns.services.providers import participant_client
from campaigns.services.relay.common import (
    HUMAN,
    HUMAN_ANSWERS,
    RETRY_ATTEMPTS,
    ProgressCallback,
    _describe,
    _update_job,
)
from campaigns.services.relay.fitting import TooLong, fitted_answer
from campaigns.services.relay.streaming import StepStream, publish_progress
from campaigns.services.relay_tools import answer_with_memory
from campaigns.services.turns import turn_create
from campaigns.services.usage import (
    model_call_complete,
    model_call_note,
    step_key,
)
from campaigns.services.windows import call_options, model_window
from campaigns.validation import max_content_chars
from context_engine.agent_output import ParsedTurn, parse_agent_output
from context_engine.llm import (
    ContextLengthError,
    LLMError,
    Usage,
    call_status,
    call_with_retries,
    is_offline,
    offline_usage,
)
from context_engine.llm.offline import word_chunks
from context_engine.relay import (
    ANSWER,
    OfflineAgent,
    Step,
    repair_instruction,
    step_instruction,
)
from context_engine.render import frozen_prefix, to_openai_messages
from context_engine.weak_output import ECHOED, NO_LABELS, QUOTES, drop_echoes, usable


def _sleep(seconds: float) -> None:
    """Backoff between model retries (a module attribute so tests can watch it)."""
    time.sleep(seconds)


def _retry_base_delay() -> float:
    return float(settings.BABEL_LLM_RETRY_BASE_DELAY)


class _StepFailed(Exception):
    """A step could not produce stored turns; the message says why (for the DM)."""


@dataclass
class _Outcome:
    """What became of a step's answer beyond its turns: echoed items dropped, whether the
    repair request fixed it, and the items held for the DM's review by reason."""

    echoes: int = 0
    repaired: int = 0
    held: dict[str, int] = field(default_factory=dict)


class _Steps:
    """The state of one round run (its Job, its cast, its round) and how one step is asked
    for and stored. `_Round` (runner) plays the steps in order."""

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
        publish_progress(
            experiment_id=self.experiment.pk, round_=self.round, percent=percent, message=message
        )
        if self.callback is not None:
            self.callback(percent, message)

    def _stored(self) -> dict[tuple[str, str], RoundStep]:
        rows = RoundStep.objects.filter(experiment=self.experiment, round=self.round)
        return {(row.step, row.speaker): row for row in rows}

    # one step ---------------------------------------------------------------------
    def _commit(
        self,
        step: Step,
        participant: Participant,
        status: str,
        write=None,
        **detail,
    ) -> bool:
        """Commit one step: its key row, its turns (``write()`` returns their ids) and the
        Job's record, in one transaction. False, with nothing stored, when the key is
        already taken (another run stored this step first)."""
        role = step.role
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
                self._committed = list(row.turns)
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
        if step.kind == ANSWER and participant.model == HUMAN:
            self._commit(step, participant, RoundStep.Status.SKIPPED, reason=HUMAN_ANSWERS)
            return
        if step.kind == ANSWER and not step.whisperers:
            self._commit(
                step, participant, RoundStep.Status.SKIPPED, reason="no whispers to answer"
            )
            return
        self._streams: list[StepStream] = []
        self._committed: list[int] = []
        try:
            parsed, outcome = self._ask(step, participant)
            self._store(step, participant, parsed, outcome)
        except _StepFailed as exc:
            for stream in self._streams:
                stream.withdraw()
            self._store_failure(step, participant, str(exc))
        else:  # the stored turns replace the drafts of the answer that made them
            for stream in self._streams:
                stream.stored(self._committed)

    def _ask(self, step: Step, participant: Participant) -> tuple[list[ParsedTurn], _Outcome]:
        """Build the pack (fitted to the model's window), call the model (with retries;
        a "too long" once more on a smaller pack, `relay.fitting`), parse. Outside any
        transaction. A provider this process cannot reach fails the step: never offline
        under another model's name.

        Weak output (`context_engine.weak_output`): items that echo the instructions are
        dropped; an answer with nothing usable left gets one repair request (its text
        quoted back, the pack rebuilt for the same window with that as input, keyed
        ``:repair``); if the repair is no better, what the parser closed is held for the
        DM's review, and an answer that was only echoes leaves the DM a note."""
        instruction = step_instruction(step)
        role = participant.role
        try:
            client = participant_client(participant)
        except ValueError as exc:
            raise _StepFailed(_describe(exc)) from exc
        state = {"input": instruction, "window": model_window(participant)}

        def build(window):
            return pack_for_role(
                experiment=self.experiment, role=role, input_text=state["input"], window=window
            )

        def ask(looked_up: bool) -> str:
            text, state["window"] = fitted_answer(
                participant=participant,
                window=state["window"],
                build=build,
                call=lambda pack, window: self._call(
                    client, pack, step, participant, looked_up=looked_up, window=window
                ),
                fail=_StepFailed,
            )
            return text

        def rebuild(note: str):
            state["input"] = f"{instruction}\n\n{note}"
            return build(state["window"])

        # The memory tool (relay_tools): lookup lines run as this role, then one more call.
        answer = answer_with_memory(
            experiment=self.experiment,
            role=role,
            text=ask(False),
            rebuild=rebuild,
            ask=lambda _pack: ask(True),
        )
        parsed = self._parse(answer.text, participant)
        if not parsed:
            raise _StepFailed("the model answered with no text")
        kept, echoes = drop_echoes(parsed, instruction, names=self.roles)
        outcome = _Outcome(echoes=echoes)
        if usable(kept):
            return kept, outcome
        # One repair request: the same model, its answer quoted back, asked for the labels.
        state["input"] = repair_instruction(step, answer.text)
        try:
            text, state["window"] = fitted_answer(
                participant=participant,
                window=state["window"],
                build=build,
                call=lambda pack, window: self._call(
                    client, pack, step, participant, repair=True, window=window
                ),
                fail=_StepFailed,
            )
        except _StepFailed:
            text = ""  # the repair call failed: the answer is held as it was
        again, echoed = drop_echoes(self._parse(text, participant), instruction, names=self.roles)
        outcome.echoes += echoed
        if usable(again):
            outcome.repaired = 1
            return again, outcome
        if kept:  # held for the DM's review, as the parser closed it, by its reason
            for item in kept:
                reason = item.reason if item.label else NO_LABELS
                outcome.held[reason] = outcome.held.get(reason, 0) + 1
        else:  # nothing but the format echoed back: no turn, a note for the DM
            outcome.held[ECHOED] = 1
        return kept, outcome

    def _parse(self, text: str, participant: Participant) -> list[ParsedTurn]:
        return parse_agent_output(
            text,
            speaker=participant.role,
            speaker_kind=participant.kind,
            roles=self.roles,
            dm_roles=self.dm_roles,
        )

    def _call(
        self,
        client,
        pack,
        step: Step,
        participant: Participant,
        *,
        looked_up: bool = False,
        repair: bool = False,
        window=None,
    ) -> str:
        """One model call (with retries) for ``pack``, its usage recorded (`ModelCall`),
        a call that did not answer too, with its status; the offline agent answers
        locally. The call after a memory lookup is keyed apart, a failed call by status."""
        messages = to_openai_messages(pack)
        key = step_key(round=self.round, step=step.kind, role=participant.role)
        key = f"{key}:lookup" if looked_up else key
        key = f"{key}:repair" if repair else key
        record = partial(
            model_call_note,
            experiment=self.experiment,
            job=self.job,
            round=self.round,
            role=participant.role,
            step=step.kind,
            model=participant.model,
            messages=messages,
        )
        stream = self._stream(step, participant)
        if is_offline(client):
            tools = bool((self.experiment.config or {}).get("offline_agent_tools"))
            text = OfflineAgent(tools=tools).respond(pack, step, looked_up=looked_up)
            for piece in word_chunks(text):  # the offline agent "writes" a word at a time
                stream.on_text(piece)
            stream.finish()
            record(key=key, usage=offline_usage(messages, text))
            return text
        retry = partial(
            call_with_retries,
            attempts=RETRY_ATTEMPTS,
            base_delay=_retry_base_delay(),
            sleep=_sleep,
            # a model on a CPU that timed out takes as long again: not resent
            retry_timeouts=not getattr(client, "cpu", False),
        )
        started = time.monotonic()
        try:
            completion = model_call_complete(
                experiment=self.experiment,
                role=participant.role,
                client=client,
                messages=messages,
                options=call_options(participant, window),
                frozen_prefix=frozen_prefix(pack),
                retry=retry,
                on_text=stream.on_text,
            )
        except LLMError as exc:
            stream.withdraw()
            status = call_status(exc)
            record(
                key=f"{key}:{status}",
                usage=Usage(),
                status=status,
                error=_describe(exc),
                seconds=time.monotonic() - started,
            )
            if isinstance(exc, ContextLengthError):
                raise TooLong(exc, pack) from exc
            raise _StepFailed(f"{type(exc).__name__}: {_describe(exc)}") from exc
        stream.finish()
        record(
            key=key,
            usage=completion.usage,
            status=ModelCall.Status.OK,
            seconds=time.monotonic() - started,
        )
        return completion.text

    def _stream(self, step: Step, participant: Participant) -> StepStream:
        """The live drafts of one call's answer; an earlier call's in this step (a memory
        lookup, a refit, a repair) are withdrawn: this answer replaces them."""
        streams = getattr(self, "_streams", None)
        if streams is None:
            streams = self._streams = []
        for earlier in streams:
            earlier.withdraw()
        streams.clear()
        stream = StepStream(
            experiment=self.experiment,
            round_=self.round,
            step=step.kind,
            participant=participant,
            roles=self.roles,
            dm_roles=self.dm_roles,
        )
        streams.append(stream)
        return stream

    def _clip(self, content: str) -> str:
        """Content over the experiment's limit is cut, saying so (never a failed write)."""
        if len(content) <= self.content_limit:
            return content
        note = f"\n[cut by the relay: {len(content) - self.content_limit} characters over]"
        keep = max(0, self.content_limit - len(note))
        return (content[:keep] + note)[: self.content_limit]

    def _guard(self, participant: Participant, parsed: list[ParsedTurn]) -> list[Verdict]:
        """The output leak guard's verdict on each item meant for more than its speaker
        (unparsed output is already DM-only). One guard per audience; outside any
        transaction, like the model call."""
        # The guards the answer's live stream built for the same audiences index the
        # same hidden texts (nothing was stored in between): built once per step.
        streams = getattr(self, "_streams", None) or []
        guards: dict[tuple[str, ...] | None, OutputGuard] = dict(
            streams[-1].guards if streams else {}
        )
        verdicts = []
        for item in parsed:
            if item.needs_review or not wider_than_speaker(item.visibility, participant.role):
                verdicts.append(PASS)
                continue
            guard = guards.get(item.visibility)
            if guard is None:
                guard = guards[item.visibility] = OutputGuard(
                    experiment=self.experiment,
                    speaker=participant.role,
                    visibility=item.visibility,
                )
            verdicts.append(guard.check(self._clip(item.content)))
        return verdicts

    def _write_parsed(self, participant: Participant, parsed: list[ParsedTurn]):
        verdicts = self._guard(participant, parsed)

        def write() -> list[int]:
            ids = []
            for item, verdict in zip(parsed, verdicts, strict=True):
                fields = {
                    "experiment": self.experiment,
                    "round": self.round,
                    "speaker": participant.role,
                    "kind": item.kind,
                    "content": self._clip(item.content),
                    "visibility": list(item.visibility) if item.visibility is not None else None,
                    "tags": list(item.tags),
                    "hinge": item.hinge,
                    "needs_review": item.needs_review,
                }
                if verdict.held:
                    turn = turn_hold(review=verdict.review, quotes=list(verdict.records), **fields)
                else:
                    turn = turn_create(**fields)
                ids.append(turn.pk)
            return ids

        write.held = sum(1 for v in verdicts if v.held)
        return write

    def _store(
        self, step: Step, participant: Participant, parsed: list[ParsedTurn], outcome: _Outcome
    ) -> None:
        review = sum(1 for item in parsed if item.needs_review)
        try:
            if parsed:
                write = self._write_parsed(participant, parsed)
                guarded = write.held
            else:  # only the format echoed back: a DM-only note, no turn of the agent's
                write = self._note(
                    f"Relay: {participant.role}'s answer ({step.kind}, model "
                    f"{participant.model}) only echoed the format instructions, even when "
                    "asked once more; nothing was stored as a turn this round."
                )
                guarded = 0
            reasons = dict(outcome.held)
            if guarded:
                reasons[QUOTES] = guarded
            self._commit(
                step,
                participant,
                RoundStep.Status.OK,
                write,
                review=review,
                held=sum(reasons.values()),
                held_reasons=reasons,
                repaired=outcome.repaired,
                echoes=outcome.echoes,
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
