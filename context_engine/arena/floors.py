"""The Arena's two model-free floors (SPEC §5.7): what any pack must beat at equal tokens.

Both get a role's readable turns as of the round a question is asked (nothing else: no
hidden turn is ever a candidate) and a token budget, and render what they keep as the
pack renders turn lines (`lines.turn_entry`), counting each line at the pack's own
estimate:

- `recency`: the newest turns that fit, newest first;
- `bm25`: the turns ranked by classic BM25 against the question
  (`ranking.Bm25Index`), best first; turns that share no word with it never join.

A turn that does not fit is skipped and the next one tried, so a floor spends its budget
as fully as its order allows. Kept lines are written in story order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from context_engine import tokens
from context_engine.lines import turn_entry
from context_engine.ranking import Bm25Index
from context_engine.types import TurnView

FLOORS = ("recency", "bm25")


@dataclass(frozen=True)
class FloorPack:
    text: str
    tokens: int
    turn_ids: tuple[int, ...]


def fill(ordered: Iterable[TurnView], budget: int) -> FloorPack:
    """The turns of ``ordered`` that fit ``budget``, in that order of preference."""
    kept: list[tuple[int, int, str]] = []
    spent = 0
    for turn in ordered:
        entry = turn_entry(turn)
        if spent + entry.cost > budget:
            continue
        spent += entry.cost
        kept.append((turn.seq, turn.id, entry.line))
    kept.sort()
    text = "\n".join(line for _, _, line in kept)
    return FloorPack(text, tokens.count(text) if text else 0, tuple(i for _, i, _ in kept))


def recency_floor(readable: Sequence[TurnView], budget: int) -> FloorPack:
    return fill(reversed(readable), budget)


class Bm25Floor:
    """One role's readable turns as of one round, indexed once for every question asked
    there and every budget."""

    def __init__(self, readable: Sequence[TurnView]):
        self.by_id = {turn.id: turn for turn in readable}
        self.index = Bm25Index([(turn.id, turn.content) for turn in readable])

    def ranked(self, question: str) -> list[TurnView]:
        return [self.by_id[turn_id] for turn_id, _ in self.index.rank(question)]
