"""Replay a campaign: every role's pack as of any round, from a history loaded once.

`History` is the whole campaign as frozen dataclasses (the caller loads it with a
fixed number of queries). `Replay.prepare(checkpoints)` walks the rounds once and folds
what the background tasks would have stored by then, in memory, with the offline engine:

- digests per audience (roles whose digest-eligible visible turns are identical share
  one), folded at the end of a round when due — ``memory_interval`` rounds since the
  last, or a milestone in the audience's new turns — with the deterministic offline
  digest (`fallback_digest`: tagged headings and extracted key facts), exactly the rule
  of `campaigns.services.memory.digests`;
- each role's strategic summary of its own monologues older than its last two.

`Replay.pack_input(round, role, config)` then gives the `PackInput` the context service
would load at that round for that strategy (`history_needs`: the window, hinge anchors,
the role's own last monologues, full-text retrieval candidates for the relay's
instruction), with lore as it stood (entries first seen by then) — no I/O at all.
Visibility is the engine's own rule (`candidates.readable_turn`), and `build_pack`
re-filters whatever it is given.

Not replayed (documented limits): world-state snapshots (a stored state holds only its
latest values, so replays pass none), /checkpoint and /clear events, and model-written
digests (the replay folds offline, which keeps every hinge by construction).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field, replace

from context_engine import tokens
from context_engine.candidates import readable_turn
from context_engine.commands import history_needs
from context_engine.memory.digest import OFFLINE_MODEL, fallback_digest
from context_engine.memory.milestones import detect_milestones
from context_engine.memory.monologues import condense_monologues
from context_engine.relay import ACT, NARRATE, Step, step_instruction
from context_engine.retrieval import query_for, search_memory
from context_engine.types import (
    DigestView,
    LoreView,
    PackConfig,
    PackInput,
    ParticipantView,
    TurnView,
)

RAW_MONOLOGUES = 2
STRATEGIC_MAX_TOKENS = 300


@dataclass(frozen=True)
class History:
    """A whole campaign, loaded once."""

    participants: tuple[ParticipantView, ...]
    turns: tuple[TurnView, ...]
    lore: tuple[LoreView, ...] = ()
    hook: str = ""
    rules: str = ""
    config: PackConfig = field(default_factory=PackConfig)
    memory_interval: int = 4
    digest_tokens: int = 1500
    review_turn_ids: frozenset[int] = frozenset()  # unparsed output: never in a digest

    @property
    def last_round(self) -> int:
        return max((t.round for t in self.turns), default=0)


def scaled_config(config: PackConfig, *, strategy: str, total: int) -> PackConfig:
    """``config`` with ``strategy`` and its section budgets scaled to sum to ``total``."""
    budgets = list(config.budgets)
    current = sum(b for _, b in budgets) or 1
    scaled = [(name, int(b * total // current)) for name, b in budgets]
    if scaled:
        name, last = scaled[-1]
        scaled[-1] = (name, last + total - sum(b for _, b in scaled))
    tiers = ()
    if config.tier_budgets:
        tier_total = sum(b for _, b in config.tier_budgets) or 1
        tiers = tuple((n, int(b * total // tier_total)) for n, b in config.tier_budgets)
    return replace(config, strategy=strategy, budgets=tuple(scaled), tier_budgets=tiers)


@dataclass
class _Memory:
    """One audience's fold state."""

    digest: DigestView | None = None
    covered: int = -1  # position (in story order) of the last folded turn
    known_npcs: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Snapshot:
    digests: dict[str, DigestView | None]
    strategic: dict[str, DigestView | None]


def _with_tokens(turn: TurnView) -> TurnView:
    return turn if turn.tokens else replace(turn, tokens=tokens.count(turn.content))


class Replay:
    """Packs of any role as of any prepared checkpoint round (see the module doc)."""

    def __init__(self, history: History):
        self.history = history
        # Story order: by round, then seq. "As of round R" is every turn with round <= R.
        self.turns = tuple(
            sorted((_with_tokens(t) for t in history.turns), key=lambda t: (t.round, t.seq, t.id))
        )
        self._rounds = [t.round for t in self.turns]
        self.participants = history.participants
        self.roles = tuple(p.role for p in history.participants)
        self._by_role = {p.role: p for p in history.participants}
        dms = [p.role for p in history.participants if p.kind == "dm"]
        self.dm_role = sorted(dms)[0] if dms else "DM"
        self.players = tuple(p.role for p in history.participants if p.kind == "player")
        self._readable: dict[str, list[int]] = {}
        for p in history.participants:
            omniscient = p.kind == "judge"
            self._readable[p.role] = [
                i for i, t in enumerate(self.turns) if readable_turn(t, p.role, omniscient)
            ]
        self._snapshots: dict[int, Snapshot] = {}

    # --- memory ------------------------------------------------------------------------

    def prepare(self, checkpoints: list[int]) -> None:
        """Fold digests and strategic summaries once, recording them at each checkpoint."""
        wanted = sorted(set(checkpoints))
        if not wanted:
            return
        readers = [p for p in self.participants if p.kind != "judge"]
        eligible: dict[str, list[int]] = {p.role: [] for p in readers}
        signature: dict[str, int] = {p.role: 0 for p in readers}
        memory: dict[tuple[str, ...], _Memory] = {}
        latest: dict[str, DigestView | None] = {p.role: None for p in readers}
        strategic: dict[str, DigestView | None] = {p.role: None for p in readers}
        position = 0
        first = min(self._rounds, default=0)
        for r in range(first - 1, wanted[-1]):
            # Include every turn of round r.
            while position < len(self.turns) and self.turns[position].round <= r:
                turn = self.turns[position]
                if turn.kind != "monologue" and turn.id not in self.history.review_turn_ids:
                    for p in readers:
                        if readable_turn(turn, p.role, False):
                            eligible[p.role].append(position)
                            signature[p.role] = hash((signature[p.role], turn.id))
                position += 1
            if r >= first:
                self._fold_round(r, readers, eligible, signature, memory, latest, strategic)
            if r + 1 in wanted:
                self._snapshots[r + 1] = Snapshot(dict(latest), dict(strategic))
        for checkpoint in wanted:  # a checkpoint before the first round: nothing folded
            self._snapshots.setdefault(checkpoint, Snapshot({}, {}))

    def _fold_round(self, r, readers, eligible, signature, memory, latest, strategic) -> None:
        groups: dict[tuple[int, int], list[str]] = {}
        for p in readers:
            groups.setdefault((signature[p.role], len(eligible[p.role])), []).append(p.role)
        for roles in sorted(tuple(sorted(g)) for g in groups.values()):
            state = memory.setdefault(roles, _Memory())
            positions = eligible[roles[0]]
            start = bisect_right(positions, state.covered)
            new = [self.turns[i] for i in positions[start:]]
            if new:
                last_round = state.digest.round_to if state.digest else -1
                due = r - last_round >= self.history.memory_interval or bool(
                    detect_milestones(new, set(state.known_npcs))
                )
                if not due:
                    continue
                self._fold(roles, r, state, new, positions[-1])
                for role in roles:
                    latest[role] = state.digest
            for role in roles:
                strategic[role] = self._strategic(role, r, strategic[role])

    def _fold(self, roles, r, state: _Memory, new: list[TurnView], covered: int) -> None:
        previous = state.digest
        result = fallback_digest(
            previous, new, max_tokens=self.history.digest_tokens, model=OFFLINE_MODEL
        )
        round_from = previous.round_from if previous else min(t.round for t in new)
        round_to = max(r, previous.round_to if previous else 0, *(t.round for t in new))
        state.digest = DigestView(
            audience=roles,
            round_from=round_from,
            round_to=round_to,
            text=result.text,
            sections=result.sections,
            method=result.method,
            version=(previous.version + 1) if previous else 1,
            source_turn_ids=result.source_turn_ids,
        )
        state.covered = covered
        for turn in new:
            for tag in turn.tags:
                if tag.lower().startswith("npc:"):
                    state.known_npcs.add(tag.split(":", 1)[1].partition(":")[0].strip())

    def _strategic(self, role: str, r: int, previous: DigestView | None) -> DigestView | None:
        own = [
            t
            for i in self._readable[role]
            if (t := self.turns[i]).round <= r
            and t.kind == "monologue"
            and t.speaker == role
            and t.id not in self.history.review_turn_ids
        ]
        older = own[:-RAW_MONOLOGUES] if len(own) > RAW_MONOLOGUES else []
        if not older:
            return previous
        if previous is not None and previous.source_turn_ids[-1:] == (older[-1].id,):
            return previous
        text = condense_monologues(older, client=None, max_tokens=STRATEGIC_MAX_TOKENS)
        if not text:
            return previous
        return DigestView(
            audience=(role,),
            round_from=older[0].round,
            round_to=max(t.round for t in older),
            text=text,
            method="fallback",
            version=(previous.version + 1) if previous else 1,
            source_turn_ids=tuple(t.id for t in older),
        )

    # --- packs -------------------------------------------------------------------------

    def readable_turns(self, role: str, round_: int) -> list[TurnView]:
        """``role``'s readable turns as of ``round_``, in story order (the Arena's floors
        and evidence recall see exactly these)."""
        end = bisect_right(self._rounds, round_)
        mine = self._readable[role]
        return [self.turns[i] for i in mine[: bisect_right(mine, end - 1)]]

    def instruction(self, role: str, round_: int) -> str:
        """The relay's input for ``role`` at ``round_`` (what its pack is built for)."""
        participant = self._by_role[role]
        if participant.kind == "dm":
            step = Step(NARRATE, role, "dm", round_, dm_role=role, players=self.players)
        elif participant.kind == "player":
            step = Step(ACT, role, "player", round_, dm_role=self.dm_role)
        else:
            return ""
        return step_instruction(step)

    def lore_at(self, round_: int) -> tuple[LoreView, ...]:
        """Lore as it stood: entries first seen by ``round_`` (never rejected ones)."""
        return tuple(
            replace(e, last_seen_round=min(e.last_seen_round, round_))
            if e.last_seen_round > round_
            else e
            for e in self.history.lore
            if e.first_seen_round <= round_ and e.status != "rejected"
        )

    def pack_input(
        self, round_: int, role: str, config: PackConfig, *, input_text: str | None = None
    ) -> PackInput:
        """``role``'s pack input at ``round_`` under ``config`` (prepare() that round first).

        ``input_text`` defaults to the relay's instruction for the role at that round."""
        snapshot = self._snapshots.get(round_)
        if snapshot is None:
            raise ValueError(f"Round {round_} was not prepared; call prepare([{round_}]).")
        participant = self._by_role[role]
        omniscient = participant.kind == "judge"
        end = bisect_right(self._rounds, round_)
        mine = self._readable[role]
        visible = mine[: bisect_right(mine, end - 1)]
        needs = history_needs(config, round_)
        if input_text is None:
            input_text = self.instruction(role, round_)
        chosen = self._needed(visible, needs, role)
        turns = [self.turns[i] for i in sorted(chosen)]
        if needs.unreadable_whispers and not omniscient:
            turns.extend(self._stubs(end, set(visible), needs, role))
        retrieval: tuple[TurnView, ...] = ()
        around: tuple[TurnView, ...] = ()
        if needs.retrieval_candidates:
            query = query_for(input_text, [t for t in turns if t.content], self.participants)
            readable = [self.turns[i] for i in visible]
            retrieval, around = search_memory(
                query, readable, config.retrieval_preset, omniscient=omniscient
            )
        return PackInput(
            role=role,
            participants=self.participants,
            turns=tuple(sorted(turns, key=lambda t: (t.seq, t.id))),
            config=config,
            hook=self.history.hook,
            rules=self.history.rules,
            current_round=round_,
            input_text=input_text,
            lore=self.lore_at(round_),
            digest=snapshot.digests.get(role),
            strategic_summary=snapshot.strategic.get(role),
            retrieval_turns=retrieval,
            retrieval_context=around,
        )

    def _needed(self, visible: list[int], needs, role: str) -> set[int]:
        if needs.full:
            return set(visible)
        chosen: set[int] = set()
        turns = self.turns
        for i in visible:
            t = turns[i]
            if (needs.from_round is not None and t.round >= needs.from_round) or (
                needs.hinge_from_round is not None and t.hinge and t.round >= needs.hinge_from_round
            ):
                chosen.add(i)
        if needs.last_turns:
            transcript = [i for i in visible if turns[i].kind != "monologue"]
            by_seq = sorted(transcript, key=lambda i: turns[i].seq)
            chosen.update(by_seq[-needs.last_turns :])
        if needs.monologue_count:
            own = [i for i in visible if turns[i].kind == "monologue" and turns[i].speaker == role]
            own.sort(key=lambda i: turns[i].seq)
            chosen.update(own[-needs.monologue_count :])
        return chosen

    def _stubs(self, end: int, visible: set[int], needs, role: str) -> list[TurnView]:
        stubs = []
        for i in range(end):
            t = self.turns[i]
            if t.kind != "whisper" or i in visible:
                continue
            if needs.full or (needs.from_round is not None and t.round >= needs.from_round):
                stubs.append(replace(t, content="", tags=(), tokens=0))
        return stubs
