"""A tiny builder for TurnView sequences in memory tests."""

from __future__ import annotations

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
