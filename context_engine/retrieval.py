"""Passive retrieval (SPEC §5.8): the older turns and lore that answer the current input.

Candidates are only what the reader may already see (the `View` filtered them):

- turns: the caller's ranked hits (`View.retrieval_turns`, best first: BM25 over the
  role's readable turns, its own monologues included, `context_engine.ranking`, computed
  by the loader from the database's term rows or by the Arena's replay in memory),
  each followed by its neighbouring readable turns (`View.retrieval_context`), the
  exchange around an answer. A monologue is never a neighbour (but for judges, who read
  them all): an agent's own older plan is found when the input asks for it, and is shown
  as the monologue section shows it (``(private thought)``);
- facts: lore entries the frozen section did not define in full and archived (cold)
  state fields, ranked by BM25 against the same query.

Priority, highest first: the role's own pinned /search, /lore, /timeline results, the
preset's quota of facts, then each turn hit followed by its neighbours. When the budget
is short the lowest priority goes first; what stays renders pinned, facts, then turns in
story order (round numbers in every line). Nothing already in the recent window is
retrieved again. Retrieval stays on at every strain tier: it is a local index read.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from typing import NamedTuple

from context_engine import ranking, strain, textops, tokens
from context_engine.lines import lore_line, turn_entry
from context_engine.memory.vocabulary import zipf
from context_engine.state import field_line
from context_engine.trimming import Line, assemble_filling
from context_engine.types import (
    STORY_ORDER,
    LoreView,
    PackItem,
    ParticipantView,
    Section,
    StateFieldView,
    TrimEvent,
    TurnView,
)


@dataclass(frozen=True)
class Preset:
    facts: int  # lore entries / archived state fields
    hits: int  # ranked turns the loader fetches (each with its neighbours)
    neighbours: int  # readable turns on each side of a hit
    # The widest exchange of the `NEIGHBOURS_FIRST` best hits, which `rank` narrows to
    # what the retrieval budget holds (`_first_width`); never narrower than ``neighbours``.
    first_neighbours: int = 0

    def neighbours_of(self, position: int) -> int:
        """Readable turns on each side that the hit ranked ``position`` (0-based) brings
        at most: what the loader fetches and the replay finds for it."""
        if position < NEIGHBOURS_FIRST:
            return max(self.first_neighbours, self.neighbours)
        return self.neighbours


# On LoCoMo's ten conversations (README, "Arena") the two best hits' exchanges widened to
# three a side as far as the better half of the hits still fits, every other hit keeping
# one, raised `layered`'s mean evidence recall at 2,000 / 4,000 / 8,000 tokens (as far as
# every hit fits: at 4,000 / 8,000 only); the answer sits within three turns of the best
# match far more often than in a lower-ranked match. Widening every hit's exchange made
# the loader read and rank six neighbours of 40 hits for a pack (1.46x the instructions
# of a 1,000-turn pack at 50,000 turns): two hits' wider exchanges are 8 more rows.
PRESETS = {
    "minimal": Preset(facts=1, hits=8, neighbours=0),
    "standard": Preset(facts=2, hits=40, neighbours=1, first_neighbours=3),
    "deep": Preset(facts=3, hits=80, neighbours=2, first_neighbours=3),
}
NEIGHBOURS_FIRST = 2  # hits whose neighbours come before the lower-ranked hits
CONTEXT_TURNS = 4  # the newest turns whose rarer words join the query
SNIPPET_TOKENS = 300  # a longer retrieved turn is cut to this
HEADER = "## Retrieved memories (older turns and facts matching the current input)"


# A stated date or time: "8 May, 2023", "May 8", "1:56 pm", "Day 12", "2023".
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
DATE = re.compile(
    rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})"
    rf"|(?:{_MONTHS})\s+\d{{1,2}}\b|\d{{1,2}}:\d{{2}}\s*[ap]\.?m\b|day\s+\d+\b|(?:1[6-9]|20)\d{{2}}\b)",
    re.IGNORECASE,
)


_DIGIT = re.compile(r"\d")  # every form `DATE` knows has a digit: most turns need no more


def states_date(turn: TurnView) -> bool:
    return _states_date(turn.content)


@lru_cache(maxsize=8192)
def _states_date(text: str) -> bool:
    """Cached per text, as `lines.turn_entry` is per turn: a round's opener dates the hits
    of every pack that finds that round, and the regexes took ~6 µs a turn (a quarter of
    `rank` at 50,000 turns)."""
    return bool(_DIGIT.search(text)) and bool(DATE.search(text))


def preset(name: str) -> Preset:
    return PRESETS.get(name, PRESETS["standard"])


def context_texts(turns: Sequence[TurnView]) -> list[str]:
    """The newest `CONTEXT_TURNS` turns' texts (no monologues), oldest first: what the
    scene is about. ``turns`` must be readable; the loader and the replay pass the
    window they loaded, the engine its `View`, so all three build the same query."""
    newest = sorted(
        (t for t in turns if t.kind != "monologue" and t.content), key=attrgetter("seq")
    )
    return [t.content for t in newest[-CONTEXT_TURNS:]]


def query_for(
    input_text: str, turns: Sequence[TurnView], participants: Sequence[ParticipantView]
) -> ranking.Query:
    """The retrieval query of one pack (the same in the loader, the replay and here)."""
    return ranking.make_query(
        input_text, context_texts(turns), [p.role for p in participants], zipf=zipf
    )


def ranked_hits(
    query: ranking.Query, postings: dict[str, Sequence[ranking.Posting]], limit: int
) -> list[int]:
    """Ids of the ``limit`` best-ranked turns. The loader and the replay both take their
    hits here, so they rank alike. Turns of the hot window may rank too: under strain
    or a small budget the window does not show them all, and the engine skips those it
    does show."""
    return ranking.ranked_ids(query, postings, limit)


def search_memory(
    query: ranking.Query,
    turns: Sequence[TurnView],
    preset_name: str,
    *,
    omniscient: bool = False,
) -> tuple[tuple[TurnView, ...], tuple[TurnView, ...]]:
    """(hits, their neighbours) from ``turns`` in memory: what the loader reads from the
    database for a pack, for callers that hold the whole readable history (the Arena's
    replay, tests). ``turns`` must be exactly what the role may read (its own monologues
    among them); ``omniscient``: the reader is a judge, whose neighbours may be
    monologues (as `campaigns.reads.search.hit_query` decides)."""
    readable = sorted(turns, key=STORY_ORDER)
    if not query or not readable:
        return (), ()
    docs = [
        (t.id, t.seq, t.content, t.tokens or textops.count(t.content), t.speaker) for t in readable
    ]
    postings = ranking.postings_of(query, docs)
    chosen = preset(preset_name)
    ids = ranked_hits(query, postings, chosen.hits)
    by_id = {t.id: t for t in readable}
    hits = tuple(by_id[i] for i in ids)
    shown = readable if omniscient else [t for t in readable if t.kind != "monologue"]
    seqs = [t.seq for t in shown]
    around: dict[int, TurnView] = {}
    openers: dict[int, TurnView] = {}
    for turn in shown:
        openers.setdefault(turn.round, turn)
    for position, hit in enumerate(hits):
        near = _neighbours(hit, shown, seqs, chosen.neighbours_of(position))
        opener = openers.get(hit.round)
        for turn in (*near, *([opener] if opener is not None else [])):
            around[turn.id] = turn
    return hits, tuple(sorted(around.values(), key=lambda t: t.seq))


class Hit(NamedTuple):  # a named tuple, like `trimming.Line`: ~120 per pack
    line: str
    ref: str
    kind: str  # lore | state | turn
    cost: int
    seq: int = 0  # story order of a turn hit
    group: int = 2  # 0 pinned · 1 facts · 2 turns (render order)
    item: PackItem | None = None  # what the section lists (`section` makes it if None)


@lru_cache(maxsize=32768)
def _turn_hit(turn: TurnView, group: int = 2) -> Hit:
    """Kept per turn, as `turn_entry` is: the same turns are hits, neighbours or openers
    pack after pack (~80 a pack)."""
    entry = turn_entry(turn)
    if entry.cost > SNIPPET_TOKENS:
        line = tokens.truncate(entry.line, SNIPPET_TOKENS - 1) + "…"
        return Hit(line, entry.ref, "turn", textops.count(line) + 1, turn.seq, group)
    # The entry's item is made once per turn (`lines.Entry.item`): ~100 hits a pack.
    return Hit(entry.line, entry.ref, "turn", entry.cost, turn.seq, group, entry.item)


def _facts(
    query: ranking.Query, quota: int, lore: list[LoreView], cold_fields: list[StateFieldView]
) -> list[Hit]:
    if quota <= 0 or not query or not (lore or cold_fields):
        return []
    text = " ".join(t.word for t in query.terms)
    hits = []
    for fact, _ in _fact_index(tuple(lore), tuple(cold_fields)).rank(text)[:quota]:
        if isinstance(fact, LoreView):
            line, ref, kind = lore_line(fact), f"lore:{fact.id}", "lore"
        else:
            line, ref, kind = field_line(fact) + " [archived]", f"state:{fact.name}", "state"
        hits.append(Hit(line, ref, kind, textops.count(line) + 1, group=1))
    return hits


@lru_cache(maxsize=256)
def _fact_index(lore: tuple[LoreView, ...], cold_fields: tuple[StateFieldView, ...]):
    """The facts' BM25 index, kept per (lore, archived fields): a pack ranks them twice
    (its pinned results' need, then its retrieval section) and the next pack's are
    nearly always the same; views hash by their contents, so an edit is a new key."""
    docs: list[tuple[object, str]] = [(entry, f"{entry.term} {entry.definition}") for entry in lore]
    docs += [(field, f"{field.name.replace('_', ' ')} {field.value}") for field in cold_fields]
    return ranking.Bm25Index(docs)


def _neighbours(hit: TurnView, known: list[TurnView], seqs: list[int], count: int) -> list:
    """The ``count`` nearest turns of ``known`` (seq-sorted, ``seqs`` their seqs) on each
    side of ``hit``, nearest first; ``hit`` itself need not be among them (an own
    monologue, which is no neighbour)."""
    first, after = bisect_left(seqs, hit.seq), bisect_right(seqs, hit.seq)
    out: list[TurnView] = []
    for distance in range(count):
        for position in (after + distance, first - 1 - distance):  # the reply, then the cue
            if 0 <= position < len(known):
                out.append(known[position])
    return out


def rank(
    query: ranking.Query,
    preset_name: str,
    lore: list[LoreView],
    cold_fields: list[StateFieldView],
    hits: Sequence[TurnView],
    known: Sequence[TurnView],
    exclude: set[str],
    pinned: Sequence[TurnView | LoreView] = (),
    budget: int | None = None,
) -> list[Hit]:
    """The candidates in priority order (see the module doc).

    ``hits`` are ranked turns (best first; a player's own monologues among them);
    ``known`` every readable turn the caller loaded that may be a neighbour (window,
    hits, their neighbours — as many a side as `Preset.neighbours_of` says; monologues
    only for judges), in which a hit's neighbours are found, by story position;
    ``exclude`` the refs already in the pack (the recent window);
    ``budget`` the section's tokens, when known: the best hits' exchanges, which come
    before the other hits, are then only as wide as keeps the better half of the hits
    within it (`_first_width`); without it, the preset's narrower width.
    """
    out: list[Hit] = []
    placed: set[str] = set(exclude)
    for item in pinned:
        if isinstance(item, LoreView):
            line = lore_line(item)
            out.append(Hit(line, f"lore:{item.id}", "lore", textops.count(line) + 1, group=0))
        else:
            out.append(_turn_hit(item, group=0))
        placed.add(out[-1].ref)
    chosen = preset(preset_name)
    out += [h for h in _facts(query, chosen.facts, lore, cold_fields) if h.ref not in placed]
    top = list(hits[: chosen.hits])
    if not top:  # pinned results and facts only: no neighbours to find
        return out
    ordered = sorted({t.id: t for t in known}.values(), key=STORY_ORDER)
    seqs = [t.seq for t in ordered]
    around = {
        hit.id: _neighbours(hit, ordered, seqs, chosen.neighbours_of(position))
        for position, hit in enumerate(top)
    }
    # A round's opening turn, when it states a date, dates every hit of that round (the
    # loader fetches it with the hit; the first known turn of a round is that opener).
    openers = {turn.round: turn for turn in reversed(ordered)}  # the first of each round wins
    dating: dict[int, bool] = {}  # by opener id: many hits share a round's opener
    dated = {}
    for hit in top:
        opener = openers.get(hit.round)
        if opener is not None and opener.id not in dating:
            dating[opener.id] = states_date(opener)
        dated[hit.id] = [opener] if opener is not None and dating[opener.id] else []
    best, rest = top[:NEIGHBOURS_FIRST], top[NEIGHBOURS_FIRST:]
    width = _first_width(out, best, rest, dated, around, chosen, placed, budget)
    # The best hits bring their exchange at once; then the other hits; then theirs.
    order = [t for hit in best for t in (hit, *dated[hit.id], *around[hit.id][: 2 * width])]
    order += rest
    order += [t for hit in rest for t in (*dated[hit.id], *around[hit.id])]
    for turn in order:
        hit = _turn_hit(turn)  # kept per turn, its ref with it
        if hit.ref not in placed:
            placed.add(hit.ref)
            out.append(hit)
    return out


def _first_width(
    out: list[Hit],
    best: list[TurnView],
    rest: list[TurnView],
    dated: dict[int, list[TurnView]],
    around: dict[int, list[TurnView]],
    chosen: Preset,
    placed: set[str],
    budget: int | None,
) -> int:
    """How many neighbours a side the ``best`` hits bring before the ``rest``: the widest
    (up to ``chosen.first_neighbours``) with which the better half of the preset's hits
    (`kept_hits`) still fits ``budget`` after what ``out`` holds (pinned results, facts),
    else ``chosen.neighbours``; without a budget, ``chosen.neighbours``. The other hits'
    exchanges come after every hit, so only these can push a hit out: a fixed three a
    side cut a 120-round generated campaign at 2,000 tokens from 1.00 to 0.86, and
    keeping every hit kept the best exchanges narrow at 2,000 tokens on LoCoMo, where
    the lower half of 40 hits rarely answers (README, "Arena")."""
    narrow, widest = chosen.neighbours, chosen.first_neighbours
    if budget is None or widest <= narrow:
        return narrow
    refs = set(placed)
    cost = textops.count(HEADER) + 1 + sum(h.cost for h in out)
    kept = rest[: max(0, kept_hits(chosen) - len(best))]

    def add(turns) -> None:
        nonlocal cost
        for turn in turns:
            entry = _turn_hit(turn)
            if entry.ref not in refs:
                refs.add(entry.ref)
                cost += entry.cost

    # What comes at every width (the best hits, their dates, the kept hits), then the
    # best hits' k-th pair of neighbours for k = 1, 2, …: the cost only grows, so the
    # width is the last k that fits (one pass, not one per width).
    add(t for hit in best for t in (hit, *dated[hit.id]))
    add(kept)
    width = narrow
    for k in range(widest):
        add(t for hit in best for t in around[hit.id][2 * k : 2 * k + 2])
        if k >= narrow:
            if cost > budget:
                break
            width = k + 1
    return width


def kept_hits(chosen: Preset) -> int:
    """The best-ranked hits the best hits' wider exchanges may never push out: the better
    half of the preset's."""
    return chosen.hits // 2


def section(name: str, budget: int, hits: list[Hit]) -> tuple[Section, list[TrimEvent], list[str]]:
    """Fit hits by priority, a hit that does not fit skipped for the next (the budget is
    spent as fully as the order allows); render pinned, facts, then turns in story order."""
    # Positional: a named tuple built from keywords takes ~0.2 µs longer, ~120 times a pack.
    lines = [
        Line(
            (hit.group, hit.seq if hit.group == 2 else index),  # order
            hit.line,  # text
            hit.item or PackItem(hit.kind, hit.ref, hit.cost),  # item
            hit.cost,  # cost
            (-index,),  # drop_key
            "lowest-ranked retrieval snippet goes first",  # reason
        )
        for index, hit in enumerate(hits)
    ]
    return assemble_filling(name, budget, HEADER, lines)


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
    without = untrimmed - own_need  # the pack's need counts pinned results in full
    before, after = strain.tier(without, total_budget), strain.tier(untrimmed, total_budget)
    if strain.TIERS.index(after) > strain.TIERS.index(before):
        warnings.append(
            f"Pinned retrieval ({own_need} tokens) raises memory strain from {before} to {after}."
        )
    return warnings
