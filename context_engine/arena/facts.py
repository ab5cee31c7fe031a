"""Facts the Arena scores packs on: planted (from the transcript) or derived.

A fact is readable by a role when its audience is null (everyone) or names the role;
judges (omniscient) read every fact. A *hinge fact* is one whose id starts with
``hinge`` (the transcript format has no flag for it): ``hinge_retention`` is measured
over those alone.

Derived facts, for campaigns that declare none (deterministic, in story order):

- ``hinge-<seq>``: each hinge turn's key terms (rule-based lore candidates), audience =
  the turn's visibility;
- ``lore-<term>``: each confirmed lore entry's term, audience = the entry's audience;
- ``thread-<name>``: each thread still open at the end, audience = the visibility of the
  turn that opened it;
- ``secret-<role>``: each participant's secret goal (its key terms, or its first words),
  for its owner only; with a reveal round, ``secret-<role>-revealed`` makes the same
  answer public from the round after it.

A derived fact with an audience keeps only answer strings that are really private: a
term that also stands in text a role outside the audience reads (a public turn, a bio)
is no secret, and finding it in that role's pack is no leak. A private fact left with no
private answer is not derived at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from context_engine.memory._text import first_sentence
from context_engine.memory.extraction import extract_candidates, merge_key
from context_engine.types import LoreView, ParticipantView, TurnView
from context_engine.visibility import Visibility

MAX_KEY_TERMS = 2
CLOSED_THREADS = ("resolved", "closed", "done", "ended")


@dataclass(frozen=True)
class FactView:
    id: str
    round: int
    audience: Visibility
    answer: tuple[str, ...]
    question: str

    @property
    def answer_key(self) -> tuple[str, ...]:
        """The answer as a comparable key: two facts with the same key hold the same text."""
        return tuple(sorted({a.strip().lower() for a in self.answer}))


def is_hinge_fact(fact: FactView) -> bool:
    return fact.id.lower().startswith("hinge")


def entitled(fact: FactView, role: str, *, omniscient: bool = False) -> bool:
    """May ``role`` read ``fact``? (Introduction round is the caller's business.)"""
    if omniscient or fact.audience is None:
        return True
    return role in fact.audience


def _key_terms(text: str, ignore: Sequence[str]) -> tuple[str, ...]:
    terms = [c.term for c in extract_candidates(text, ignore=ignore)]
    return tuple(terms[:MAX_KEY_TERMS])


def derive_facts(
    *,
    turns: Sequence[TurnView],
    lore: Sequence[LoreView],
    participants: Sequence[ParticipantView],
) -> tuple[FactView, ...]:
    """Facts for a campaign that declares none (see the module doc)."""
    roles = [p.role for p in participants]
    facts: list[FactView] = []
    ordered = sorted(turns, key=lambda t: (t.seq, t.id))
    facts_from = _PrivateAnswers(ordered, participants)
    for turn in ordered:
        if not turn.hinge or not turn.content:
            continue
        terms = _key_terms(turn.content, roles)
        if terms:
            facts.append(
                FactView(
                    id=f"hinge-{turn.seq}",
                    round=turn.round,
                    audience=turn.visibility,
                    answer=terms,
                    question=f"What turning point did {turn.speaker} reach in round {turn.round}?",
                )
            )
    for entry in sorted(lore, key=lambda e: (merge_key(e.term), e.id)):
        if entry.status != "confirmed":
            continue
        facts.append(
            FactView(
                id=f"lore-{entry.id}",
                round=entry.first_seen_round,
                audience=entry.audience,
                answer=(entry.term,),
                question=f"What is {entry.term}?",
            )
        )
    facts.extend(_open_threads(ordered))
    for p in sorted(participants, key=lambda p: p.role):
        if not p.secret.strip() or p.kind == "judge":
            continue
        question = f"What is {p.role}'s secret goal?"
        # The goal's first words as written (no ellipsis: the answer must match the text).
        phrase = (" ".join(first_sentence(p.secret).split()[:6]),)
        answer = _key_terms(p.secret, roles) or phrase
        # Key terms that others read anyway say nothing secret: then the goal's own words.
        if facts_from.private(FactView("", 0, (p.role,), answer, "")) is None:
            answer = phrase
        facts.append(FactView(f"secret-{p.role}", 0, (p.role,), answer, question))
        if p.reveal_round is not None:
            facts.append(
                FactView(f"secret-{p.role}-revealed", p.reveal_round + 1, None, answer, question)
            )
    return tuple(kept for fact in facts if (kept := facts_from.private(fact)) is not None)


class _PrivateAnswers:
    """Which answer strings of a private fact no outsider reads anywhere."""

    def __init__(self, turns: Sequence[TurnView], participants: Sequence[ParticipantView]):
        # Tags count as text: packs show them (a thread's name is in every tagged turn).
        self._turns = [(t.visibility, " ".join((t.content, *t.tags)).lower()) for t in turns]
        self._public = [p.bio.lower() for p in participants]

    def private(self, fact: FactView) -> FactView | None:
        if fact.audience is None:
            return fact
        audience = set(fact.audience)
        outside = self._public + [
            text
            for visibility, text in self._turns
            if visibility is None or not set(visibility) <= audience
        ]
        answer = tuple(a for a in fact.answer if not any(a.lower() in t for t in outside))
        if not answer:
            return None
        return FactView(fact.id, fact.round, fact.audience, answer, fact.question)


def _open_threads(turns: Sequence[TurnView]) -> list[FactView]:
    opened: dict[str, tuple[str, TurnView]] = {}
    for turn in turns:
        for tag in turn.tags:
            if not tag.lower().startswith("thread:"):
                continue
            name, _, qualifier = tag[len("thread:") :].strip().partition(":")
            key = name.strip().lower()
            if not key:
                continue
            if qualifier.strip().lower() in CLOSED_THREADS:
                opened.pop(key, None)
            elif key not in opened:
                opened[key] = (name.strip(), turn)
    return [
        FactView(
            id=f"thread-{key}",
            round=turn.round,
            audience=turn.visibility,
            answer=(name,),
            question=f"What is the open thread {name!r} about?",
        )
        for key, (name, turn) in opened.items()
    ]
