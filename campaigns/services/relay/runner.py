"""`_Round`: one round run, step by step: open the round, play the plan (the DM
narrates, each player acts, the DM answers whispers), skip the steps already stored,
park on a human's step, store a human's timeout, and end the Job."""

from __future__ import annotations

import logging
from functools import partial

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction
from django.utils import timezone

from campaigns.models import Experiment, Job, Participant, RoundStep, Turn
from campaigns.reads.usage import usage_summary
from campaigns.services.relay.common import (
    HUMAN,
    _continue,
    _dispatch_timeout,
    _store_step_row,
    _update_job,
)
from campaigns.services.relay.steps import _StepFailed, _Steps
from campaigns.services.relay.streaming import publish_waiting
from campaigns.services.reveals import secrets_reveal_due
from context_engine.relay import ACT, ANSWER, HESITATE, NARRATE, Step, Whisper
from context_engine.visibility import parse_stored_visibility
from context_engine.weak_output import QUOTES

log = logging.getLogger(__name__)


class _Round(_Steps):
    """The state of one round run: its Job, its cast, its steps."""

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

    def _step_for(self, kind: str, participant: Participant) -> Step:
        whispers = self._whispers() if kind == ANSWER else ()
        return Step(
            kind=kind,
            role=participant.role,
            speaker_kind=participant.kind,
            round=self.round,
            dm_role=self.dm.role,
            players=tuple(p.role for p in self.players),
            whisperers=tuple(dict.fromkeys(w.speaker for w in whispers)),
            whispers=whispers,
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
            # A human DM is never parked on the answer step: whether anyone whispered
            # the DM is hidden from the other players, and "waiting for DM" (or its
            # absence) would tell them. They answer whispers on the whispers page.
            if participant.model == HUMAN and kind != ANSWER:
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
            transaction.on_commit(
                partial(
                    publish_waiting,
                    experiment_id=self.experiment.pk,
                    round_=self.round,
                    role=step.role,
                )
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

    def _whispers(self) -> tuple[Whisper, ...]:
        """What players whispered to a DM this round (whispers whose audience includes a
        DM role; none held), by whisperer in turn order, then in the order written: the
        DM's answer step names each whisperer and quotes the first words."""
        whispers = Turn.objects.filter(
            experiment=self.experiment,
            round=self.round,
            kind=Turn.Kind.WHISPER,
            held_at__isnull=True,  # a held whisper reached no one yet
        ).exclude(speaker__in=self.dm_roles)
        sent: dict[str, list[Whisper]] = {}
        for turn in whispers.order_by("seq").only("speaker", "visibility", "round", "content"):
            audience = parse_stored_visibility(turn.visibility, self.dm_roles) or ()
            if set(audience) & set(self.dm_roles):
                sent.setdefault(turn.speaker, []).append(
                    Whisper(speaker=turn.speaker, round=turn.round, text=turn.content)
                )
        return tuple(w for p in self.players for w in sent.get(p.role, ()))

    def _finish(self) -> None:
        self.result["usage"] = usage_summary(experiment=self.experiment, round=self.round)
        steps = self.result["steps"]
        done = [s for s in steps if s["status"] in ("ok", "timed_out")]
        failed = [s for s in steps if s["status"] == "failed"]
        stored = sum(len(s["turns"]) for s in done)
        if not [s for s in done if s["status"] == "ok"]:
            last = failed[-1]["error"] if failed else "no agent could act"
            with transaction.atomic():
                self.close_failed()
                self._report(
                    100,
                    f"Round {self.round} failed: no agent could act; the clock stays at "
                    f"round {self.round - 1}. Last error: {last}",
                    status=Job.Status.FAILED,
                    result=self.result,
                )
            return
        message = f"Round {self.round} done: {stored} turn(s) from {len(done)} step(s)"
        if failed:
            message += "; failed: " + ", ".join(f"{s['role']} ({s['step']})" for s in failed)
        away = [s for s in steps if s["status"] == "timed_out"]
        late = [s["role"] for s in away if not s.get("skipped")]
        skipped = [s["role"] for s in away if s.get("skipped")]
        if late:
            message += "; did not act in time: " + ", ".join(late)
        if skipped:
            message += "; skipped by the DM: " + ", ".join(skipped)
        message += _held_note(done)
        self._report(100, message, status=Job.Status.SUCCEEDED, result=self.result)

    def close_failed(self) -> bool:
        """A round in which no agent acted did not happen: the clock goes back to the
        round before (if it still shows this one), and this round's step rows go, so the
        next run plays the same round whole. The failure notes stay (DM-only), and so do
        reveals, which the rounds before had earned. False when an agent did act (the
        round stands) or a later round has opened."""
        with transaction.atomic():
            Experiment.objects.select_for_update().get(pk=self.experiment.pk)
            rows = RoundStep.objects.filter(experiment=self.experiment, round=self.round)
            if rows.filter(status=RoundStep.Status.OK).exists():
                return False
            back = Experiment.objects.filter(
                pk=self.experiment.pk, current_round=self.round
            ).update(current_round=self.round - 1)
            if back:
                rows.delete()
                self.experiment.current_round = self.round - 1
        return bool(back)

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
        reasons: dict[str, int] = {}
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
                parsed, weak = self._ask(hesitate, self.dm)
                if parsed:  # only echoes of the format: the note below instead
                    write = self._write_parsed(self.dm, parsed)
                    reasons = dict(weak.held)
                    if write.held:
                        reasons[QUOTES] = write.held
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
                    skipped=skipped,
                    held=sum(reasons.values()),
                    held_reasons=reasons,
                )
                if stored:
                    why = "was skipped" if skipped else "did not act in time"
                    _continue(self.job, f"{role} {why} ({done}); the round goes on")
        except (ValidationError, DatabaseError) as exc:
            log.warning("could not store %s's timeout: %s", role, exc)
            return "failed"
        return done if stored else "already acted"


def _held_note(done: list[dict]) -> str:
    """What the round's message says about weak output: how many answers were held for
    the DM's review and why, and how many a repair request fixed."""
    note = ""
    held = sum(s.get("held", 0) for s in done)
    if held:
        reasons: dict[str, int] = {}
        for s in done:
            counted = s.get("held_reasons") or ({QUOTES: s["held"]} if s.get("held") else {})
            for reason, count in counted.items():
                reasons[reason] = reasons.get(reason, 0) + count
        why = (
            next(iter(reasons))
            if len(reasons) == 1
            else ", ".join(f"{reason}: {count}" for reason, count in sorted(reasons.items()))
        )
        note += f"; {held} answer(s) held for the DM's review ({why})"
    repaired = sum(s.get("repaired", 0) for s in done)
    if repaired:
        note += f"; {repaired} answer(s) labelled on a repair request"
    return note
