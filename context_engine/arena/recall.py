"""Evidence recall (SPEC §5.7): does a role's pack, built with a question as its input,
hold the turns that answer it?

For each question and each asking role (the question's ``role``, or else every non-judge
role that can read at least one evidence turn), the role's *readable evidence* is the
question's evidence turns it may read (`candidates.readable_turn`) that exist by
``asked_at_round``. A turn is found when its content as a pack writes it (`lines.frame`:
a multi-line turn's further lines start with the continuation mark), whitespace-
normalised, stands in the pack's text (every section but the input, which is the
question itself). Recall of a pair = found ÷ readable evidence; a configuration's recall
is the mean over the pairs with at least one readable evidence turn, overall and per
category. Evidence a role cannot read never counts for or against it.

The two floors (`floors`) are scored the same way at the same budgets.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from context_engine.arena.floors import FLOORS, Bm25Floor, fill, recency_floor
from context_engine.arena.replay import Replay
from context_engine.candidates import readable_turn
from context_engine.lines import frame
from context_engine.pack import build_pack
from context_engine.types import Pack, PackConfig, TurnView

INPUT_SECTION = "input"


@dataclass(frozen=True)
class QuestionView:
    question: str
    answer: str
    evidence: tuple[int, ...]  # turn ids
    category: str
    asked_at_round: int
    role: str | None = None  # None: every non-judge role that can read some evidence


@dataclass(frozen=True)
class Ask:
    """One (question, role) pair that is scored: the role reads ≥ 1 evidence turn."""

    question: QuestionView
    role: str
    evidence: tuple[TurnView, ...]  # the readable evidence


def normalise(text: str) -> str:
    return " ".join(text.split())


def asks_for(
    replay: Replay, questions: Sequence[QuestionView], roles: Sequence[str] = ()
) -> list[Ask]:
    """The scored pairs, in question order then role order (``roles``: only these)."""
    by_id = {turn.id: turn for turn in replay.turns}
    kinds = {p.role: p.kind for p in replay.participants}
    wanted = set(roles or replay.roles)
    out: list[Ask] = []
    for q in questions:
        turns = [by_id[i] for i in q.evidence if i in by_id]
        turns = [t for t in turns if t.round <= q.asked_at_round]
        askers = (
            [q.role] if q.role is not None else [r for r in replay.roles if kinds[r] != "judge"]
        )
        for role in askers:
            if role not in wanted:
                continue
            omniscient = kinds[role] == "judge"
            readable = tuple(t for t in turns if readable_turn(t, role, omniscient))
            if readable:
                out.append(Ask(q, role, readable))
    return out


def found(text: str, evidence: Sequence[TurnView]) -> int:
    """How many evidence turns' contents, framed as every pack and floor writes them,
    stand in ``text`` (already normalised)."""
    return sum(1 for turn in evidence if _as_written(turn.content) in text)


@lru_cache(maxsize=4096)
def _as_written(content: str) -> str:
    """A turn's content as packs write it, normalised: once per evidence turn, not once
    per pack and floor that is searched for it."""
    return normalise(frame(content))


def pack_search_text(pack: Pack) -> str:
    return normalise(
        "\n\n".join(s.text for s in pack.sections if s.text and s.name != INPUT_SECTION)
    )


@dataclass
class Tally:
    """Per-pair recalls and pack sizes of one row (a configuration or a floor)."""

    recalls: list[tuple[str, float]] = field(default_factory=list)  # (category, recall)
    tokens: list[int] = field(default_factory=list)
    build_ms: list[float] = field(default_factory=list)

    def add(self, ask: Ask, hits: int, size: int) -> None:
        self.recalls.append((ask.question.category, hits / len(ask.evidence)))
        self.tokens.append(size)

    def as_dict(self) -> dict:
        by_category: dict[str, list[float]] = {}
        for category, recall in self.recalls:
            by_category.setdefault(category, []).append(recall)
        return {
            "evidence_recall": _mean(r for _, r in self.recalls),
            "evidence_by_category": {c: _mean(v) for c, v in sorted(by_category.items())},
            "evidence_tokens": round(statistics.fmean(self.tokens), 1) if self.tokens else 0.0,
            "evidence_pairs": len(self.recalls),
        }


def _mean(values) -> float | None:
    values = list(values)
    return round(statistics.fmean(values), 4) if values else None


def score_questions(
    replay: Replay,
    asks: Sequence[Ask],
    configs: Sequence[tuple[str, int, PackConfig]],
    *,
    clock: Callable[[], float] = time.perf_counter,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[dict[tuple[str, int], Tally], dict[tuple[str, int], Tally]]:
    """(tallies per (strategy, budget), tallies per (floor, budget)); ``replay`` must be
    prepared at every ``asked_at_round``."""
    tallies = {(s, b): Tally() for s, b, _ in configs}
    budgets = sorted({b for _, b, _ in configs})
    floors = {(name, b): Tally() for name in FLOORS for b in budgets}
    indexes: dict[tuple[str, int], Bm25Floor] = {}
    total, done = len(asks) * len(configs), 0
    for ask in asks:
        q, role = ask.question, ask.role
        for strategy, budget, config in configs:
            inp = replay.pack_input(q.asked_at_round, role, config, input_text=q.question)
            started = clock()
            pack = build_pack(inp)
            tallies[(strategy, budget)].build_ms.append((clock() - started) * 1000)
            tallies[(strategy, budget)].add(
                ask, found(pack_search_text(pack), ask.evidence), pack.total_tokens
            )
            done += 1
            if progress is not None and done % 25 == 0:
                progress(done, total, f"question packs: {strategy} @ {budget}")
        readable = replay.readable_turns(role, q.asked_at_round)
        index = indexes.get((role, q.asked_at_round))
        if index is None:
            index = indexes[(role, q.asked_at_round)] = Bm25Floor(readable)
        ranked = index.ranked(q.question)
        for budget in budgets:
            for name, floor in (
                ("recency", recency_floor(readable, budget)),
                ("bm25", fill(ranked, budget)),
            ):
                floors[(name, budget)].add(
                    ask, found(normalise(floor.text), ask.evidence), floor.tokens
                )
    return tallies, floors
