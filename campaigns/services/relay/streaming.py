"""A step's answer published while the model writes it (issue 25 asks 3 and 4).

`StepStream` takes the model's chunks (`on_text`), splits them into the answer's parts as
they come (`context_engine.answer_stream`: a part's audience is what the parser will store
it with; the start of a line is given to no one until its label is known) and publishes
each part as a *draft* on the live channels of its audience
(`selectors.live_channels_for_audience`).

Guard first: a part meant for more than its speaker goes through the output leak guard
as it grows (`GuardStream`, the same hidden texts as the stored answer's `OutputGuard`):
only text the guard has passed is published, so the last few words wait until the guard
has seen what follows them. When the guard finds a quote, the draft is ``withdrawn`` on
its channels and never shown there again; its whole text goes, as a new draft marked
``held``, only to the hold's reviewers (`selectors.live_channels_for_held`). Parts that
stay with their speaker (monologues) or that the parser closes for review are not
guarded, as when they are stored.

Draft ids are random: they count nothing. Nothing here carries a turn id, position or
count to a player's channel; the ``stored`` event names the step's turn ids only on the
omniscient channels.

Events (``data`` fields):

- ``draft``: ``draft_id, round, step, speaker, kind, audience, text, seq`` (+ ``held``)
- ``draft_end``: ``draft_id`` — the model finished the answer this draft is part of
- ``withdrawn``: ``draft_id`` — drop it (the guard held it, its call failed or was redone)
- ``stored``: ``draft_id`` (+ ``turns`` on omniscient channels) — the step is stored:
  the timeline now has its turns, which replace the draft
- ``progress``: ``round, percent`` (+ ``message`` on the owner's channel)
- ``waiting``: ``round, role`` — the round now waits for that human (`publish_waiting`)

Stored turns that no model step wrote (a human's post, a DM's note, a reveal, an edit)
are announced by `campaigns.services.live_turns` (the ``turn`` event).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field

from campaigns.models import Experiment, Participant
from campaigns.reads import selectors
from campaigns.services import live
from campaigns.services.output_guard import OutputGuard, wider_than_speaker
from context_engine.answer_stream import AnswerSplit, Part, Text
from context_engine.guard import GuardStream, PhraseIndex

log = logging.getLogger(__name__)


def _draft_id() -> str:
    return secrets.token_hex(8)


@dataclass
class _Draft:
    id: str
    part: Part
    channels: list[str]
    guard: GuardStream | None
    seq: int = 0
    text: str = ""  # everything the model wrote for this part
    held_id: str = ""  # the reviewers' draft, once the guard held this one
    held_channels: list[str] = field(default_factory=list)
    held_seq: int = 0


class StepStream:
    """One model call's answer, published part by part as it is written."""

    def __init__(
        self,
        *,
        experiment: Experiment,
        round_: int,
        step: str,
        participant: Participant,
        roles,
        dm_roles,
    ):
        self.experiment = experiment
        self.campaign = experiment.pk
        self.round = round_
        self.step = step
        self.speaker = participant.role
        self.split = AnswerSplit(
            speaker=participant.role,
            speaker_kind=participant.kind,
            roles=roles,
            dm_roles=dm_roles,
        )
        self.drafts: dict[int, _Draft] = {}
        self.guards: dict[object, OutputGuard] = {}
        self.finished = False
        self.broken = False

    # the model's side ----------------------------------------------------------------
    def on_text(self, chunk: str) -> None:
        """A chunk from the model. A failure here costs the live view, never the step:
        the drafts are withdrawn and the rest of the answer is not streamed."""
        if self.broken:
            return
        try:
            for event in self.split.feed(chunk):
                self._take(event)
        except Exception:
            log.exception("streaming %s's answer stopped", self.speaker)
            self.broken = True
            self.withdraw()

    def finish(self) -> None:
        """The model finished: release what each guard passed and end the drafts."""
        if self.finished or self.broken:
            return
        self.finished = True
        try:
            for event in self.split.close():
                self._take(event)
        except Exception:
            log.exception("streaming %s's answer stopped", self.speaker)
            self.broken = True
            self.withdraw()
            return
        for draft in self.drafts.values():
            if draft.guard is not None and not draft.held_id:
                self._send(draft, draft.guard.close())
                self._check_held(draft)
            if not draft.held_id and draft.seq:
                live.publish(self.campaign, draft.channels, "draft_end", {"draft_id": draft.id})
            if draft.held_id:
                live.publish(
                    self.campaign, draft.held_channels, "draft_end", {"draft_id": draft.held_id}
                )

    # the relay's side --------------------------------------------------------------
    def withdraw(self) -> None:
        """Drop every draft (the call failed, or its answer is being asked again)."""
        for draft in self.drafts.values():
            if draft.seq and not draft.held_id:
                live.publish(self.campaign, draft.channels, "withdrawn", {"draft_id": draft.id})
            if draft.held_id:
                live.publish(
                    self.campaign, draft.held_channels, "withdrawn", {"draft_id": draft.held_id}
                )

    def stored(self, turn_ids: list[int]) -> None:
        """The step is stored: its turns replace the drafts."""
        omniscient = {selectors.LIVE_ALL, selectors.LIVE_OWNER}
        for draft in self.drafts.values():
            pairs = [(draft.id, draft.channels)] if draft.seq and not draft.held_id else []
            if draft.held_id:
                pairs.append((draft.held_id, draft.held_channels))
            for draft_id, channels in pairs:
                seeing = [ch for ch in channels if ch in omniscient]
                others = [ch for ch in channels if ch not in omniscient]
                live.publish(
                    self.campaign, seeing, "stored", {"draft_id": draft_id, "turns": turn_ids}
                )
                live.publish(self.campaign, others, "stored", {"draft_id": draft_id})

    # parts ---------------------------------------------------------------------------
    def _take(self, event: Part | Text) -> None:
        if isinstance(event, Part):
            self.drafts[event.index] = _Draft(
                id=_draft_id(),
                part=event,
                channels=selectors.live_channels_for_audience(event.visibility),
                guard=self._guard_for(event),
            )
            return
        draft = self.drafts[event.index]
        draft.text += event.text
        if draft.held_id:
            self._send_held(draft, event.text)
        elif draft.guard is None:
            self._send(draft, event.text)
        else:
            self._send(draft, draft.guard.feed(event.text))
            self._check_held(draft)

    def _guard_for(self, part: Part) -> GuardStream | None:
        if part.needs_review or not wider_than_speaker(part.visibility, self.speaker):
            return None
        guard = self.guards.get(part.visibility)
        if guard is None:
            guard = self.guards[part.visibility] = OutputGuard(
                experiment=self.experiment, speaker=self.speaker, visibility=part.visibility
            )
        return GuardStream(guard.engine, known=_Known(guard))

    def _payload(self, draft_id: str, part: Part, text: str, seq: int) -> dict:
        return {
            "draft_id": draft_id,
            "round": self.round,
            "step": self.step,
            "speaker": self.speaker,
            "kind": part.kind,
            "audience": list(part.visibility) if part.visibility is not None else None,
            "text": text,
            "seq": seq,
        }

    def _send(self, draft: _Draft, text: str) -> None:
        if not text:
            return
        draft.seq += 1
        live.publish(
            self.campaign,
            draft.channels,
            "draft",
            self._payload(draft.id, draft.part, text, draft.seq),
        )

    def _check_held(self, draft: _Draft) -> None:
        """The guard found a quote: withdraw the draft, give its reviewers all of it."""
        if draft.guard is None or not draft.guard.held or draft.held_id:
            return
        if draft.seq:
            live.publish(self.campaign, draft.channels, "withdrawn", {"draft_id": draft.id})
        guard = self.guards[draft.part.visibility]
        draft.held_id = _draft_id()
        draft.held_channels = selectors.live_channels_for_held(
            guard._review_audience(draft.guard.quotes)
        )
        self._send_held(draft, draft.text)

    def _send_held(self, draft: _Draft, text: str) -> None:
        if not text:
            return
        draft.held_seq += 1
        payload = self._payload(draft.held_id, draft.part, text, draft.held_seq)
        payload["held"] = True
        live.publish(self.campaign, draft.held_channels, "draft", payload)


class _Known:
    """What the audience can already read, asked about each candidate run only (as
    `OutputGuard.check` does), remembered per run."""

    def __init__(self, guard: OutputGuard):
        self.guard = guard
        self._seen: dict[tuple[str, ...], bool] = {}

    def __call__(self, phrase) -> bool:
        phrase = tuple(phrase)
        if phrase not in self._seen:
            index = PhraseIndex(
                self.guard._known_texts(), wanted=[phrase], window=self.guard.window
            )
            self._seen[phrase] = index(phrase)
        return self._seen[phrase]


def publish_progress(*, experiment_id: int, round_: int, percent: int, message: str) -> None:
    """The round bar: the round and percent for every page (as `Job.status_line` shows
    them), the job's message for the owner's channel only (`access.job_as_read_by`)."""
    public = {"round": round_, "percent": percent}
    live.publish(experiment_id, [selectors.LIVE_ALL, selectors.LIVE_PUBLIC], "progress", public)
    live.publish(experiment_id, [selectors.LIVE_OWNER], "progress", {**public, "message": message})


def publish_waiting(*, experiment_id: int, round_: int, role: str) -> None:
    """The round now waits for ``role``'s post: every page, as the round bar tells every
    reader of the campaign whom the round waits for (`relay.waiting_for`: roles are the
    public cast list). Call it after the Job's ``waiting`` status has committed, so a
    page that refreshes its round bar on it reads "Your turn"."""
    live.publish(
        experiment_id,
        [selectors.LIVE_ALL, selectors.LIVE_PUBLIC],
        "waiting",
        {"round": round_, "role": role},
    )
