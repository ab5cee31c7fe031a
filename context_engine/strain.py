"""Memory strain (SPEC §5.2): pressure, tiers, and what each tier changes.

pressure = tokens the pack needs once the transcript is trimmed to its share ÷ total
budget (the strategies compute the need). The tier is decided in
integer arithmetic so the boundaries are exact (0.70 is Strain I, not normal):

    < 0.70 normal · [0.70, 0.85) strain_1 · [0.85, 0.95) strain_2 · >= 0.95 strain_3

Effects (applied by the ``layered`` and ``tiered`` strategies; the fixed-shape
baselines only report the tier):

- strain_1: the recent window loses its 2 oldest turns.
- strain_2: the older half of the window becomes one deterministic scene recap
  paragraph.
- strain_3: the window is the last ``STRAIN3_WINDOW`` turns (down to
  ``STRAIN3_MIN_WINDOW`` when the digest needs the room: the digest is prioritised),
  hinge anchors leave (the digest's Hinge Index holds them), and the engine inserts
  `NOTICE` — the model is told, not trusted to notice.

What a tier frees goes to the digest and, by lending, to ranked retrieval: retrieval
stays on at every tier (a local index read, not a model-run search).
"""

from __future__ import annotations

from context_engine import textops
from context_engine.lines import Entry

TIERS = ("normal", "strain_1", "strain_2", "strain_3")
THRESHOLDS_PERCENT = (70, 85, 95)
STRAIN1_WINDOW_CUT = 2
STRAIN3_WINDOW = 6
STRAIN3_MIN_WINDOW = 4
RECAP_WORDS = 16
RECAP_SHARE = 3  # the recap may use at most 1/3 of the recent budget

NOTICE = (
    "[Engine notice: memory strain III] Your memory of this campaign is strained: only "
    "the last few turns are shown in full, and everything older survives only in your "
    "memory digest. If you are unsure of an earlier detail, say so rather than invent "
    "it, and suggest /checkpoint so the table can consolidate memory."
)


def tier(untrimmed: int, total_budget: int) -> str:
    """The strain tier for a pack needing ``untrimmed`` tokens of ``total_budget``."""
    if total_budget <= 0:
        return "strain_3" if untrimmed > 0 else "normal"
    scaled = untrimmed * 100
    if scaled < THRESHOLDS_PERCENT[0] * total_budget:
        return "normal"
    if scaled < THRESHOLDS_PERCENT[1] * total_budget:
        return "strain_1"
    if scaled < THRESHOLDS_PERCENT[2] * total_budget:
        return "strain_2"
    return "strain_3"


def pressure(untrimmed: int, total_budget: int) -> float:
    return untrimmed / total_budget if total_budget > 0 else float(untrimmed > 0)


def scene_recap(entries: list[Entry]) -> str:
    """One paragraph standing in for the older half of the window at Strain II.

    Deterministic and extractive (first sentence of each turn, in order), built only
    from entries the reader could already see: a recap can never carry more than its
    sources. Whisper stubs contribute nothing.
    """
    parts = [
        f"R{e.round} {e.speaker}: {textops.first_sentence(e.content, RECAP_WORDS)}"
        for e in entries
        if e.item_kind != "stub" and e.content.strip()
    ]
    if not parts:
        return ""
    rounds = sorted({e.round for e in entries})
    span = f"round {rounds[0]}" if len(rounds) == 1 else f"rounds {rounds[0]}-{rounds[-1]}"
    return f"Scene recap ({span}, condensed under memory strain): " + " | ".join(parts)
