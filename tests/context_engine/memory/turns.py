"""A tiny builder for TurnView sequences in memory tests, and the hydrator's admission
rule over a list of public turns."""

from __future__ import annotations

from context_engine.memory.kinds import COMMON
from context_engine.memory.observe import add_observation, observe
from context_engine.types import TurnView


class Story:
    """Appends turns with increasing ids and seqs, like the relay stores them."""

    def __init__(self) -> None:
        self.turns: list[TurnView] = []

    def add(
        self,
        round: int,
        speaker: str,
        content: str,
        *,
        kind: str = "narrative",
        visibility: tuple[str, ...] | None = None,
        tags: tuple[str, ...] = (),
        hinge: bool = False,
    ) -> TurnView:
        seq = len(self.turns) + 1
        turn = TurnView(
            id=1000 + seq,
            seq=seq,
            round=round,
            speaker=speaker,
            kind=kind,
            content=content,
            visibility=visibility,
            tags=tags,
            hinge=hinge,
        )
        self.turns.append(turn)
        return turn


def campaign() -> Story:
    """Two rounds with two hinges, a faction, NPCs and threads (one resolved)."""
    story = Story()
    story.add(
        1,
        "DM",
        "The rope bridge over the Ashfall gorge burns. Lord Vane watches from the far side.",
        tags=("npc:Vane", "thread:Cross the gorge", "faction:Iron Choir:wary"),
    )
    story.add(1, "Thorin", "I cut the rope before the fire reaches us.", kind="action", hinge=True)
    story.add(
        1,
        "DM",
        "The bridge falls and the Iron Choir cheers from the cliffs.",
        tags=("faction:Iron Choir",),
    )
    story.add(
        2,
        "Cassia",
        "I accept the pact with Vane for safe passage.",
        kind="action",
        hinge=True,
        tags=("npc:Vane",),
    )
    story.add(
        2,
        "DM",
        "Vane leads you down a hidden stair to the Undermarket.",
        tags=("thread:Cross the gorge:resolved", "thread:Pay Vane's price", "npc:Mother Ash"),
    )
    return story


def admitted_keys(turns, *, roles=(), dms=("DM",)) -> set[str]:
    """Merge keys that earn an entry when ``turns`` are public turns in this order.

    Each turn is ``(round, text)`` (an unnamed player's) or ``(round, speaker, text)``;
    a speaker in ``dms`` narrates. Folds observations as the hydrator does, marked
    phrases becoming known for the turns after them.
    """
    stats: dict = {}
    known: set[str] = set()
    for seq, turn in enumerate(turns, start=1):
        round_, speaker, text = turn if len(turn) == 3 else (turn[0], "", turn[1])
        found = observe(
            text,
            ignore=(*roles, *dms),
            known_phrases=frozenset(known),
            speaker=speaker,
            narration=speaker in dms,
        )
        for obs in found:
            stats[obs.key] = add_observation(
                stats.get(obs.key), obs, turn_id=seq, seq=seq, round_=round_
            )
            if obs.kind == COMMON:
                known.add(obs.key)
    return {key for key, s in stats.items() if s.admitted()}
