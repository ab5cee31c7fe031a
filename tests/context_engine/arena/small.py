"""A hand-checkable campaign for the Arena's metrics (no database).

Round 1: public narration (moonmarks), Thorin's whisper to the DM (glassfang), a public
hinge (Quorvex). Round 2: Cassia acts. Round 3: public rain. Facts: one per planted
string, plus "rain" introduced in round 3.
"""

from __future__ import annotations

from dataclasses import replace

from context_engine.arena import FactView, History
from context_engine.types import PackConfig, ParticipantView, TurnView

PARTICIPANTS = (
    ParticipantView("DM", "dm", bio="The game master."),
    ParticipantView("Thorin", "player", bio="A dwarf."),
    ParticipantView("Cassia", "player", bio="A scout."),
)
TURNS = (
    TurnView(1, 1, 1, "DM", "narrative", "The ferry costs three moonmarks."),
    TurnView(2, 2, 1, "Thorin", "whisper", "I stole the glassfang sigil.", ("DM", "Thorin")),
    TurnView(3, 3, 1, "DM", "narrative", "The party swears the Quorvex oath.", hinge=True),
    TurnView(4, 4, 2, "Cassia", "action", "Cassia waits by the door."),
    TurnView(5, 5, 3, "DM", "narrative", "Rain falls on the pier."),
)
FACTS = (
    FactView("public-moonmarks", 1, None, ("moonmarks",), "What does the ferry cost?"),
    FactView("whisper-glassfang", 1, ("DM", "Thorin"), ("glassfang",), "What did Thorin steal?"),
    FactView("hinge-quorvex", 1, None, ("Quorvex",), "Which oath was sworn?"),
    FactView("public-rain", 3, None, ("rain falls",), "What is the weather?"),
)


def history(**config) -> History:
    return History(
        participants=PARTICIPANTS,
        turns=TURNS,
        hook="A ferry town.",
        config=replace(PackConfig(), **config),
    )
