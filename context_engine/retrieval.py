"""Passive retrieval (SPEC §5.8): dormant facts that match the input or the window.

Pure keyword ranking over candidates the reader may already see (the `View` filtered
them): lore entries that the frozen section did not define in full, archived (cold)
state fields, and older turns (search hits from the database, in full-text rank order,
plus older candidate turns the loader happened to pass). Score:

    3 × shared input keywords + 2 × lore terms named + 1 × shared names from the window

Keywords come first, then the full-text rank, then recency; anything scoring 0 is not
retrieved. Presets pick how many of each: minimal 1 lore + 1 turn, standard 2 + 2,
deep 3 + 5 ("lore" includes archived state fields).
"""

from __future__ import annotations

from dataclasses import dataclass

from context_engine import strain, textops, tokens
from context_engine.lines import Entry, lore_line, turn_entry
from context_engine.state import field_line
from context_engine.trimming import Line, assemble
from context_engine.types import LoreView, PackItem, Section, StateFieldView, TrimEvent, TurnView

PRESETS = {"minimal": (1, 1), "standard": (2, 2), "deep": (3, 5)}
SNIPPET_TOKENS = 120
HEADER = "## Retrieved memories (older facts matching the current input)"


@dataclass(frozen=True)
class Query:
    input_words: frozenset[str]
    terms: tuple[str, ...]  # lore terms named in the input or the window (lower-case)
    names: frozenset[str]  # capitalised names seen in the window
    input_lower: str = ""

    def score(self, text: str) -> int:
        if not text:
            return 0
        words = textops.terms_of(text)
        lower = text.lower()
        named = sum(1 for term in self.terms if textops.mentions(term, lower))
        return 3 * len(self.input_words & words) + 2 * named + len(self.names & words)


def make_query(input_text: str, window_texts: list[str], named_terms: list[str]) -> Query:
    names: set[str] = set()
    for text in window_texts:
        names |= textops.names_of(text)
    return Query(
        input_words=frozenset(textops.keywords(input_text)),
        terms=tuple(sorted({t.lower() for t in named_terms})),
        names=frozenset(names),
        input_lower=input_text.lower(),
    )


@dataclass(frozen=True)
class Hit:
    line: str
    ref: str
    kind: str  # lore | state | turn
    cost: int


def _snippet(entry: Entry) -> tuple[str, int]:
    if entry.cost <= SNIPPET_TOKENS:
        return entry.line, entry.cost
    cut = tokens.truncate(entry.line, SNIPPET_TOKENS - 1) + "…"
    return cut, textops.count(cut) + 1


def rank(
    query: Query,
    preset: str | None,
    lore: list[LoreView],
    cold_fields: list[StateFieldView],
    older_turns: list[TurnView],
    search_hits: tuple[TurnView, ...],
    pinned: tuple[TurnView | LoreView, ...] = (),
) -> list[Hit]:
    """The hits to show, best first: pinned results of the agent's own /search, /lore or
    /timeline (active retrieval, shown even when strain turns passive retrieval off),
    then lore/state picks, then turn picks."""
    pinned_hits: list[Hit] = []
    pinned_ids: set[int] = set()
    for item in pinned:
        if isinstance(item, LoreView):
            line = lore_line(item)
            pinned_hits.append(Hit(line, f"lore:{item.id}", "lore", textops.count(line) + 1))
        else:
            line, cost = _snippet(turn_entry(item))
            pinned_hits.append(Hit(line, f"turn:{item.id}", "turn", cost))
            pinned_ids.add(item.id)
    if preset is None:
        return pinned_hits
    lore_quota, turn_quota = PRESETS.get(preset, PRESETS["standard"])
    facts: list[tuple[tuple, LoreView | StateFieldView]] = []
    for entry in lore:
        score = query.score(f"{entry.term} {entry.definition}")
        if textops.mentions(entry.term, query.input_lower):
            score += 3
        if score > 0:
            facts.append(((-score, -entry.last_seen_round, entry.term.lower(), entry.id), entry))
    for field in cold_fields:
        score = query.score(f"{field.name.replace('_', ' ')} {field.value}")
        if score > 0:
            facts.append(((-score, -field.last_mutated_round, field.name, 0), field))
    facts.sort(key=lambda pair: pair[0])
    fact_hits = []
    for _, fact in facts[:lore_quota]:
        if isinstance(fact, LoreView):
            line, ref, kind = lore_line(fact), f"lore:{fact.id}", "lore"
        else:
            line, ref, kind = field_line(fact) + " [archived]", f"state:{fact.name}", "state"
        fact_hits.append(Hit(line, ref, kind, textops.count(line) + 1))

    turns: list[tuple[tuple, TurnView]] = []
    seen: set[int] = set(pinned_ids)
    ranked_sources = [(position, t) for position, t in enumerate(search_hits)]
    ranked_sources += [(len(search_hits), t) for t in older_turns]
    for position, turn in ranked_sources:
        if turn.id in seen:
            continue
        seen.add(turn.id)
        score = query.score(turn.content)
        if score > 0:
            turns.append(((-score, position, -turn.seq, turn.id), turn))
    turns.sort(key=lambda pair: pair[0])
    picked = []
    for _, turn in turns[:turn_quota]:
        line, cost = _snippet(turn_entry(turn))
        picked.append(Hit(line, f"turn:{turn.id}", "turn", cost))
    return pinned_hits + fact_hits + picked


def section(name: str, budget: int, hits: list[Hit]) -> tuple[Section, list[TrimEvent], list[str]]:
    """Fit hits best-first; the lowest-ranked go first when over budget."""
    lines = [
        Line(
            order=(index,),
            text=hit.line,
            item=PackItem(hit.kind, hit.ref, hit.cost),
            cost=hit.cost,
            drop_key=(-index,),
            reason="lowest-ranked retrieval snippet goes first",
        )
        for index, hit in enumerate(hits)
    ]
    return assemble(name, budget, HEADER, lines)


def need(hits: list[Hit]) -> int:
    return (textops.count(HEADER) + 1 + sum(h.cost for h in hits)) if hits else 0


def pin_warnings(
    hits: list[Hit], pinned: int, untrimmed: int, total_budget: int, retrieval_budget: int
) -> list[str]:
    """Warnings when a role's own /search, /lore or /timeline results (the first
    ``pinned`` of ``hits``, as `rank` orders them) overflow the retrieval budget or raise
    the pack's strain tier. Only the role's readable snippets are measured, so the
    warning says nothing about anything it may not read."""
    if pinned <= 0 or not hits:
        return []
    own = hits[:pinned]
    warnings = []
    own_need = need(own)
    if own_need > retrieval_budget:
        warnings.append(
            f"Pinned retrieval needs {own_need} tokens, over the retrieval budget of "
            f"{retrieval_budget}: the lowest-ranked pinned snippets are cut."
        )
    without = untrimmed - need(hits) + need(hits[pinned:])
    before, after = strain.tier(without, total_budget), strain.tier(untrimmed, total_budget)
    if strain.TIERS.index(after) > strain.TIERS.index(before):
        warnings.append(
            f"Pinned retrieval ({own_need} tokens) raises memory strain from {before} to {after}."
        )
    return warnings
