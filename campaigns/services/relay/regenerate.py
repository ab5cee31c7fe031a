"""`Regeneration`: one model step of a past round asked again (issue 24, ask 4).

The relay's own machinery plays it (`_Round._step_for` builds the step as the round
did, `_Steps._ask` asks with the pack the role reads now), so fitting, windows, retries,
the memory tool, weak-output repair and usage records are the relay's. What differs is
the end: the new items replace the texts of the turns the step wrote, each into the
turn of the same kind and audience (in order), after the output leak guard passed it for
that audience; a step's row, turns and seqs are never rewritten. See
`campaigns.services.turn_fixes`.
"""

from __future__ import annotations

from django.db import transaction

from campaigns.models import Job, RoundStep, Turn
from campaigns.services.relay.common import HUMAN
from campaigns.services.relay.runner import _Round
from campaigns.services.relay.steps import _StepFailed
from campaigns.services.turn_fixes import _replace_text, audience_of, guard_verdict


class Regeneration(_Round):
    def _fail(self, why: str) -> None:
        self._report(
            100,
            f"Round {self.round}: regenerating failed: {why}. The old text stays.",
            status=Job.Status.FAILED,
            result={**self.result, "error": why},
        )

    def run(self) -> None:  # type: ignore[override]
        data = dict(self.job.result or {})
        self.result = data
        row = RoundStep.objects.filter(pk=data.get("step_id"), experiment=self.experiment).first()
        participant = self.by_role.get(row.speaker) if row is not None else None
        if row is None or participant is None or participant.model == HUMAN or self.dm is None:
            self._fail("the step or its speaker is gone")
            return
        self.key_suffix = f":regen:{self.job.pk.hex}"
        step = self._step_for(row.step, participant)
        self._report(10, f"Round {self.round}: asking {participant.role} again ({step.kind})…")
        try:
            parsed, _outcome = self._ask(step, participant)
        except _StepFailed as exc:
            self._fail(str(exc))
            return
        self._report(80, f"Round {self.round}: checking {participant.role}'s new answer…")
        old = list(
            Turn.objects.filter(
                pk__in=row.turns or [], speaker=participant.role, held_at__isnull=True
            )
            .exclude(kind=Turn.Kind.SYSTEM)
            .order_by("seq")
        )
        fresh = [item for item in parsed if not item.needs_review and item.content.strip()]
        pairs = self._pairs(old, fresh)
        if not pairs:
            self._fail("the new answer had nothing of the same kind and audience as the old turns")
            return
        applied, held = [], 0
        for turn, content in pairs:
            verdict = guard_verdict(
                experiment=self.experiment,
                speaker=participant.role,
                visibility=audience_of(turn, self.dm_roles),
                content=content,
            )
            if verdict is not None and verdict.held:
                held += 1
                continue
            applied.append((turn, content))
        if not applied:
            self._fail(
                f"the output guard held the new text ({held} item(s) quote what their "
                "readers may not read)"
            )
            return
        self._apply(applied, held=held, dropped=len(fresh) - len(pairs))

    def _pairs(self, old: list[Turn], fresh) -> list[tuple[Turn, str]]:
        """Each old turn with the next new item of its kind and audience (clipped)."""
        pool: dict[tuple, list[str]] = {}
        for item in fresh:
            audience = None if item.visibility is None else tuple(sorted(set(item.visibility)))
            pool.setdefault((item.kind, audience), []).append(self._clip(item.content))
        pairs = []
        for turn in old:
            queue = pool.get((turn.kind, audience_of(turn, self.dm_roles)))
            if queue:
                pairs.append((turn, queue.pop(0)))
        return pairs

    def _apply(self, applied: list[tuple[Turn, str]], *, held: int, dropped: int) -> None:
        """Every replacement and the Job's end in one transaction: a rerun finds the Job
        finished (its claim fails) and replaces nothing twice."""
        user = self.job.user
        with transaction.atomic():
            if (
                not Job.objects.select_for_update()
                .filter(pk=self.job.pk, status=Job.Status.RUNNING)
                .exists()
            ):
                return
            replaced, unchanged = [], []
            for turn, content in applied:
                locked = Turn.objects.select_for_update().filter(pk=turn.pk).first()
                if locked is None or locked.held_at is not None:
                    continue
                if locked.content == content:
                    unchanged.append(locked.pk)
                    continue
                _replace_text(locked, user=user, content=content)
                replaced.append(locked.pk)
            role = self.result["role"]
            message = f"Round {self.round}: {len(replaced)} turn(s) of {role} regenerated"
            if unchanged:
                message += f"; {len(unchanged)} came back word for word"
            if held:
                message += f"; {held} new text(s) held by the output guard (old text kept)"
            if dropped:
                message += f"; {dropped} new item(s) had no turn of their kind and audience"
            self._report(
                100,
                message,
                status=Job.Status.SUCCEEDED,
                result={
                    **self.result,
                    "replaced": replaced,
                    "unchanged": unchanged,
                    "held": held,
                    "dropped": dropped,
                },
            )
