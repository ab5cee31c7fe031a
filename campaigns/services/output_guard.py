"""The output leak guard's Django side (SPEC §4, issue 23 ask 6): which texts an answer's
audience cannot read, and whether the answer quotes one of them.

`output_check` is what the relay asks before it stores an answer meant for more than its
speaker. The hidden texts come from the visibility selectors (`turns_hidden_from`,
`lore_hidden_from`, `secret_readable`): published turns some member of the audience cannot
read (GM notes, whispers and monologues of others), secret goals not yet revealed to all
of them, and World Bible entries they do not all read. The speaker's own whispers,
monologues and actions are theirs to repeat and are left out; GM notes never are (the DM
model quoting the human DM's note to the table is the leak this guard is for). A run the
audience can already read elsewhere (a public turn, shared lore, the hook, rules, bios)
is not a leak: the engine asks `PhraseIndex` about the few candidate runs only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from campaigns.models import Experiment, Participant, Turn
from campaigns.reads import selectors
from context_engine.guard import WINDOW, Hidden, LeakGuard, PhraseIndex, Quote
from context_engine.visibility import parse_stored_visibility


@dataclass(frozen=True)
class Verdict:
    """The guard's answer for one output: its quotes (empty: publish) and, when held, the
    roles who review it (the review audience, stored as its visibility while held)."""

    quotes: tuple[Quote, ...]
    review: tuple[str, ...]
    records: tuple[dict, ...]  # the quotes as `OutputHold.quotes` stores them

    @property
    def held(self) -> bool:
        return bool(self.quotes)


PASS = Verdict(quotes=(), review=(), records=())


def audience_members(*, experiment: Experiment, visibility, speaker: str) -> tuple[str, ...]:
    """Who an output meant for ``visibility`` (None: every non-judge participant) could
    tell something new: its readers but the speaker, who wrote it. (A whisper to the DM
    that repeats another player's whisper to the DM tells the DM nothing it cannot read.)"""
    if visibility is not None:
        roles = set(visibility)
    else:
        roles = set(
            experiment.participants.exclude(kind=Participant.Kind.JUDGE).values_list(
                "role", flat=True
            )
        )
    return tuple(sorted(roles - {speaker}))


def wider_than_speaker(visibility, speaker: str) -> bool:
    return visibility is None or bool(set(visibility) - {speaker})


class OutputGuard:
    """The guard for one answer's audience: built once (the hidden texts indexed), asked
    about any number of outputs for that audience (`check`)."""

    def __init__(
        self,
        *,
        experiment: Experiment,
        speaker: str,
        visibility,
        window: int = WINDOW,
        replay: bool = False,
    ):
        """``replay``: for `guard_sweep`, which asks about turns already stored as of
        when each was written (`check`'s ``at``): every secret goal is indexed with its
        reveal round, and each source with the seq it was written at."""
        self.experiment = experiment
        self.speaker = speaker
        self.members = audience_members(
            experiment=experiment, visibility=visibility, speaker=speaker
        )
        self.dms = selectors.dm_roles(experiment=experiment)
        self.window = window
        self.replay = replay
        self.audiences: dict[str, tuple[str, ...] | None] = {}
        self.texts: dict[str, str] = {}
        self.seq_of: dict[str, int] = {}  # a turn source's seq
        self.reveal_of: dict[str, int | None] = {}  # a secret's reveal round
        self.engine = LeakGuard(self._hidden(), window=window)

    def _hidden(self) -> Iterable[Hidden]:
        experiment, members = self.experiment, self.members
        hidden = selectors.turns_hidden_from(experiment=experiment, roles=members).only(
            "id", "seq", "round", "speaker", "kind", "content", "visibility"
        )
        for turn in hidden.iterator():
            if turn.speaker == self.speaker and turn.kind != Turn.Kind.GM_NOTE:
                continue  # the speaker's own words are theirs to repeat
            key = f"turn:{turn.pk}"
            audience = parse_stored_visibility(turn.visibility, self.dms)
            if turn.kind == Turn.Kind.MONOLOGUE:
                audience = (turn.speaker,)
            self.audiences[key] = audience
            self.texts[key] = turn.content
            self.seq_of[key] = turn.seq
            label = f"{turn.get_kind_display()} by {turn.speaker}, #{turn.seq} R{turn.round}"
            yield Hidden(key=key, label=label, text=turn.content)
        round_now = 0 if self.replay else selectors.current_round(experiment=experiment)
        viewers = [selectors.viewer_for_role(experiment=experiment, role=m) for m in members]
        for participant in experiment.participants.exclude(secret=""):
            if all(
                selectors.secret_readable(participant=participant, viewer=v, round_now=round_now)
                for v in viewers
            ):
                continue
            key = f"secret:{participant.role}"
            self.audiences[key] = (participant.role,)
            self.texts[key] = participant.secret
            self.reveal_of[key] = participant.reveal_round
            yield Hidden(
                key=key, label=f"{participant.role}'s secret goal", text=participant.secret
            )
        for entry in selectors.lore_hidden_from(experiment=experiment, roles=members).only(
            "id", "term", "definition", "audience"
        ):
            key = f"lore:{entry.pk}"
            self.audiences[key] = parse_stored_visibility(entry.audience, self.dms)
            self.texts[key] = entry.definition
            yield Hidden(key=key, label=f"World Bible: {entry.term}", text=entry.definition)

    def _known_texts(self, at: tuple[int, int] | None = None) -> Iterable[str]:
        experiment, members = self.experiment, self.members
        shared = selectors.turns_readable_by_all(experiment=experiment, roles=members)
        if at is not None:
            shared = shared.filter(seq__lt=at[0])
        yield from shared.values_list("content", flat=True).iterator()
        yield from selectors.lore_readable_by_all(experiment=experiment, roles=members).values_list(
            "definition", flat=True
        )
        yield experiment.hook
        yield experiment.rules
        yield from experiment.participants.values_list("bio", flat=True)
        # Secrets every member reads (revealed ones) are shared too.
        round_now = at[1] if at is not None else selectors.current_round(experiment=experiment)
        viewers = [selectors.viewer_for_role(experiment=experiment, role=m) for m in members]
        for participant in experiment.participants.exclude(secret=""):
            if all(
                selectors.secret_readable(participant=participant, viewer=v, round_now=round_now)
                for v in viewers
            ):
                yield participant.secret

    def _existed(self, quote: Quote, at: tuple[int, int]) -> bool:
        """Whether ``quote``'s source was hidden when the turn at ``(seq, round)`` was
        written: a turn source written before it, a secret not yet revealed."""
        seq, round_ = at
        if quote.key in self.seq_of:
            return self.seq_of[quote.key] < seq
        if quote.key in self.reveal_of:
            reveal = self.reveal_of[quote.key]
            return reveal is None or round_ <= reveal
        return True

    def check(self, text: str, *, at: tuple[int, int] | None = None) -> Verdict:
        """The verdict on ``text``. ``at`` (replay only): ``(seq, round)`` of a stored
        turn, judged against what existed and was hidden when it was written."""
        if not self.engine:
            return PASS
        candidates = self.engine.check(text)
        if at is not None:
            candidates = [q for q in candidates if self._existed(q, at)]
        if not candidates:
            return PASS
        known = PhraseIndex(
            self._known_texts(at), wanted=[q.phrase for q in candidates], window=self.window
        )
        quotes = tuple(self.engine.check(text, known=known))
        if at is not None:
            quotes = tuple(q for q in quotes if self._existed(q, at))
        if not quotes:
            return PASS
        return Verdict(
            quotes=quotes,
            review=self._review_audience(quotes),
            records=tuple(quote_records(quotes, texts=self.texts, audiences=self.audiences)),
        )

    def _review_audience(self, quotes: Iterable[Quote]) -> tuple[str, ...]:
        """The DM roles that read the whole audience's side and every quoted source; if
        none, the speaker alone (who wrote it). The owner and staff review every hold."""
        review = set(self.dms) & set(self.members)
        for quote in quotes:
            audience = self.audiences.get(quote.key)
            if audience is not None:
                review &= set(audience)
        return tuple(sorted(review)) or (self.speaker,)


def output_check(*, experiment: Experiment, speaker: str, visibility, text: str) -> Verdict:
    """One output, checked (answers meant for the speaker alone always pass)."""
    if not wider_than_speaker(visibility, speaker):
        return PASS
    guard = OutputGuard(experiment=experiment, speaker=speaker, visibility=visibility)
    return guard.check(text)


@dataclass
class SweepReport:
    """`guard_sweep`'s count: outputs checked, candidate runs (before the stock-phrase and
    already-readable rules), holds, and each hold's turn and quotes."""

    outputs: int = 0
    public: int = 0
    candidates: int = 0
    holds: list[tuple[int, list[dict]]] = field(default_factory=list)


def guard_sweep(*, experiment: Experiment, window: int = WINDOW) -> SweepReport:
    """Run the guard over every stored output meant for more than its speaker (public
    turns, whispers to others), each as of when it was written: the false-hold count of
    a campaign whose turns are all meant to be published."""
    report = SweepReport()
    guards: dict[tuple[str, tuple[str, ...] | None], OutputGuard] = {}
    dms = selectors.dm_roles(experiment=experiment)
    outputs = selectors.turns_visible_to(experiment=experiment, viewer=selectors.OMNISCIENT)
    for turn in outputs.filter(needs_review=False).iterator():
        visibility = parse_stored_visibility(turn.visibility, dms)
        if turn.kind == Turn.Kind.MONOLOGUE or not wider_than_speaker(visibility, turn.speaker):
            continue
        report.outputs += 1
        report.public += visibility is None
        slot = (turn.speaker, visibility)
        guard = guards.get(slot)
        if guard is None:
            guard = guards[slot] = OutputGuard(
                experiment=experiment,
                speaker=turn.speaker,
                visibility=visibility,
                window=window,
                replay=True,
            )
        at = (turn.seq, turn.round)
        report.candidates += sum(
            1 for q in guard.engine.check(turn.content) if guard._existed(q, at)
        )
        verdict = guard.check(turn.content, at=at)
        if verdict.held:
            report.holds.append((turn.seq, list(verdict.records)))
    return report


SOURCE_CONTEXT = 240  # characters of the source kept on either side of a quote


def quote_records(
    quotes: Iterable[Quote],
    *,
    texts: dict[str, str],
    audiences: dict[str, tuple[str, ...] | None],
) -> list[dict]:
    """The verdict's quotes as `OutputHold.quotes` stores them: offsets into the held
    text, and the quoted source's excerpt (with its audience, so a reviewer who cannot
    read the source is not shown it) with the quote's offsets into that excerpt."""
    records = []
    for q in quotes:
        text = texts.get(q.key, "")
        lo = max(0, q.source_start - SOURCE_CONTEXT)
        hi = min(len(text), q.source_end + SOURCE_CONTEXT)
        audience = audiences.get(q.key)
        records.append(
            {
                "key": q.key,
                "label": q.label,
                "words": q.words,
                "start": q.start,
                "end": q.end,
                "source": text[lo:hi],
                "source_start": q.source_start - lo,
                "source_end": q.source_end - lo,
                "source_clipped": [lo > 0, hi < len(text)],
                "audience": list(audience) if audience is not None else None,
            }
        )
    return records
