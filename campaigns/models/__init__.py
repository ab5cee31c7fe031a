"""Babel's data model (SPEC §3).

Models hold fields, constraints and small properties. Writes go through
`campaigns.services`, reads that depend on who is looking through `campaigns.reads.selectors`.
Visibility values are validated in one place (`campaigns.validation.clean_visibility`).
"""

from campaigns.models.arena import ArenaRun, Fact, Question
from campaigns.models.campaign import (
    MONOLOGUE_KIND,
    ContextEvent,
    Experiment,
    Participant,
    SearchBacklog,
    Turn,
    TurnRevision,
    VisibilityChange,
    WorldState,
)
from campaigns.models.guard import OutputHold
from campaigns.models.jobs import Job, RoundStep, TranscriptUpload
from campaigns.models.memory import (
    LORE_FIELDS,
    HydrationCursor,
    LoreEntry,
    LoreRevision,
    RetrievalPin,
    Summary,
    VocabularyStat,
)
from campaigns.models.seats import Invitation
from campaigns.models.usage import ModelCall

__all__ = [
    "LORE_FIELDS",
    "MONOLOGUE_KIND",
    "ArenaRun",
    "ContextEvent",
    "Experiment",
    "Fact",
    "HydrationCursor",
    "Invitation",
    "Job",
    "LoreEntry",
    "LoreRevision",
    "ModelCall",
    "OutputHold",
    "Participant",
    "Question",
    "RetrievalPin",
    "RoundStep",
    "SearchBacklog",
    "Summary",
    "TranscriptUpload",
    "Turn",
    "TurnRevision",
    "VisibilityChange",
    "VocabularyStat",
    "WorldState",
]
