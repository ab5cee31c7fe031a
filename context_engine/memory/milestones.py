"""Milestones that make the summarizer run at once instead of waiting K rounds (§5.4).

Rule-based, so the offline default behaves exactly like a configured one. Each rule
reads tags first (the DM and the relay tag turns) and plain text second:

- ``new_npc:NAME``: an ``npc:NAME`` tag whose name (case-insensitive) is not in
  ``known_npcs`` and did not appear earlier in the same batch.
- ``item_acquired:R{round} {speaker}``: an ``item:NAME`` tag, or an acquisition verb
  ("picks up", "acquires", "obtains", "pockets", "loots", "receives", "is given",
  "is handed", "claims", "takes possession") in a narrative/action/intel turn.
- ``location_change:NAME`` or ``location_change:R{round} {speaker}``: a
  ``location:NAME`` tag new to this batch, or a travel phrase ("arrives at", "enters
  the", "travels to", "reaches the", "sets out for", "sails to", "steps into",
  "descends into").
- ``decision_made:R{round} {speaker}``: a hinge-flagged turn, or a player's
  action/whisper/choice with "I choose", "decide(s/d) to", "chose", "agree(s/d) to",
  "swear(s)/swore", "refuse(s/d)", "accept(s/ed) the", "vote(s/d) to".

The strings carry names from the turns, so treat them with the turns' audience; they
are triggers, not content for a pack.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from context_engine.types import TurnView

_TEXT_KINDS = ("narrative", "action", "intel", "choice", "whisper")
_ITEM = re.compile(
    r"\b(?:picks? up|picked up|acquir(?:e|es|ed)|obtain(?:s|ed)?|pocket(?:s|ed)|"
    r"loot(?:s|ed)|receiv(?:e|es|ed)|(?:is|are|was|were) (?:given|handed)|"
    r"claim(?:s|ed)|takes? possession|took possession)\b",
    re.IGNORECASE,
)
_TRAVEL = re.compile(
    r"\b(?:arriv(?:e|es|ed) (?:at|in)|enter(?:s|ed)? the|travel(?:s|led|ed)? to|"
    r"reach(?:es|ed)? the|set(?:s)? out for|sail(?:s|ed)? to|step(?:s|ped)? into|"
    r"descend(?:s|ed)? into)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:i choose|we choose|decid(?:e|es|ed) to|chose|agree(?:s|d)? to|swear(?:s)?|swore|"
    r"refus(?:e|es|ed)|accept(?:s|ed)? the|vot(?:e|es|ed) to)\b",
    re.IGNORECASE,
)


def _tags(turn: TurnView, prefix: str) -> list[str]:
    marker = prefix + ":"
    return [
        tag[len(marker) :].partition(":")[0].strip()
        for tag in turn.tags
        if tag.lower().startswith(marker) and tag[len(marker) :].strip()
    ]


def detect_milestones(turns: Sequence[TurnView], known_npcs: set[str]) -> list[str]:
    """Milestones in ``turns`` (in story order, each reported once). See module doc."""
    known = {name.strip().lower() for name in known_npcs}
    seen_locations: set[str] = set()
    found: list[str] = []

    def add(item: str) -> None:
        if item not in found:
            found.append(item)

    for turn in sorted(turns, key=lambda t: (t.seq, t.id)):
        who = f"R{turn.round} {turn.speaker}"
        for name in _tags(turn, "npc"):
            if name.lower() not in known:
                known.add(name.lower())
                add(f"new_npc:{name}")
        text_kind = turn.kind in _TEXT_KINDS
        if _tags(turn, "item") or (text_kind and _ITEM.search(turn.content)):
            add(f"item_acquired:{who}")
        locations = _tags(turn, "location")
        for name in locations:
            if name.lower() not in seen_locations:
                seen_locations.add(name.lower())
                add(f"location_change:{name}")
        if not locations and text_kind and _TRAVEL.search(turn.content):
            add(f"location_change:{who}")
        player_move = turn.kind in ("action", "whisper", "choice")
        if turn.hinge or (player_move and _DECISION.search(turn.content)):
            add(f"decision_made:{who}")
    return found
