"""Builders for engine inputs: small, explicit campaigns for behaviour tests.

Nothing here computes an expected result; tests state their expectations themselves.
"""

from __future__ import annotations

from dataclasses import replace

from context_engine.types import (
    DEFAULT_BUDGETS,
    ContextEventView,
    DigestView,
    LoreView,
    PackConfig,
    PackInput,
    ParticipantView,
    StateFieldView,
    TurnView,
    WorldStateView,
)

DM = ParticipantView(
    "DM",
    "dm",
    bio="The narrator of the Ashfall campaign.",
    identity="Run the world fairly.",
    secret="The duke is a lich.",
)
THORIN = ParticipantView(
    "Thorin",
    "player",
    bio="A dwarf smith with a grudge.",
    identity="Play Thorin boldly.",
    secret="You poisoned Lord Vane.",
)
CASSIA = ParticipantView(
    "Cassia",
    "player",
    bio="An elven scout.",
    identity="Play Cassia carefully.",
    secret="You serve the Grey Court.",
    reveal_round=6,
)
JUDGE = ParticipantView("Arbiter", "judge", bio="Scores the table.", identity="Judge.")
PARTY = (DM, THORIN, CASSIA, JUDGE)


class Log:
    """Appends turns with increasing seq and ids, like the database would."""

    def __init__(self) -> None:
        self.turns: list[TurnView] = []

    def add(
        self,
        round: int,
        speaker: str,
        kind: str,
        content: str,
        visibility=None,
        tags: tuple[str, ...] = (),
        hinge: bool = False,
        tokens: int = 0,
    ) -> TurnView:
        seq = len(self.turns) + 1
        turn = TurnView(
            id=100 + seq,
            seq=seq,
            round=round,
            speaker=speaker,
            kind=kind,
            content=content,
            visibility=None if visibility is None else tuple(sorted(visibility)),
            tags=tags,
            hinge=hinge,
            tokens=tokens,
        )
        self.turns.append(turn)
        return turn

    def all(self) -> tuple[TurnView, ...]:
        return tuple(self.turns)


def config(**overrides) -> PackConfig:
    budgets = dict(DEFAULT_BUDGETS)
    budgets.update(overrides.pop("budgets", {}))
    return PackConfig(budgets=tuple(budgets.items()), **overrides)


def pack_input(role: str, log: Log | tuple[TurnView, ...], **overrides) -> PackInput:
    turns = log.all() if isinstance(log, Log) else log
    base = PackInput(
        role=role,
        participants=PARTY,
        turns=turns,
        hook="The city of Ashfall burns; find who lit the fire.",
        rules="Roll d20 for risky actions.",
        current_round=max((t.round for t in turns), default=0),
    )
    return replace(base, **overrides)


def lore(id: int, term: str, definition: str, **kw) -> LoreView:
    kw.setdefault("category", "term")
    kw.setdefault("status", "confirmed")
    return LoreView(id=id, term=term, definition=definition, **kw)


def digest(text: str, audience=None, round_from: int = 1, round_to: int = 4) -> DigestView:
    return DigestView(audience=audience, round_from=round_from, round_to=round_to, text=text)


def field(name: str, value: str, last: int, mutations: int = 1, audience=None) -> StateFieldView:
    return StateFieldView(
        name=name, value=value, mutations=mutations, last_mutated_round=last, audience=audience
    )


def world(*fields: StateFieldView, flags=()) -> WorldStateView:
    return WorldStateView(flags=tuple(flags), fields=tuple(fields))


def event(command: str, seq: int, round: int = 0) -> ContextEventView:
    return ContextEventView(
        command=command, round=round, seq=seq, cleared_without_checkpoint=command == "clear"
    )


def section(pack, name: str):
    return next(s for s in pack.sections if s.name == name)


def refs(pack, name: str) -> list[str]:
    return [item.ref for item in section(pack, name).items]


def text(pack) -> str:
    return "\n".join(s.text for s in pack.sections)


def with_retrieval(inp: PackInput) -> PackInput:
    """``inp`` with the retrieval hits and neighbours the loader would read for it,
    computed in memory from the role's readable turns (`retrieval.search_memory`)."""
    from context_engine.candidates import readable_turn
    from context_engine.retrieval import query_for, search_memory

    judge = any(p.role == inp.role and p.kind == "judge" for p in inp.participants)
    readable = [t for t in inp.turns if readable_turn(t, inp.role, judge)]
    query = query_for(inp.input_text, readable, inp.participants)
    hits, around = search_memory(query, readable, inp.config.retrieval_preset, omniscient=judge)
    return replace(inp, retrieval_turns=hits, retrieval_context=around)
