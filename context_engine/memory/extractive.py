"""Key facts: the extractive part of the offline digest (SPEC §5.4).

Hinges, standings and threads exist only where turns carry tags, so for ordinary
history the template alone says nothing. This module picks the covered rounds' most
informative sentences instead, each with its round and speaker ("- R3 Caroline: …"):

- *score*: rare words (wordfreq's Zipf scale, via `vocabulary.zipf`), capitalised names,
  numbers and dates, decision and change-of-state verbs, and the first mention of a
  name or rare word; divided by the square root of the sentence's length, so a short
  sentence dense in facts beats a long one that holds the same facts diluted;
- *selection*: greedy within the token budget, each candidate's rank discounted by how
  much of its weight the facts already chosen hold (redundancy: a repeated scene
  sentence that only changes a common word adds nothing) and by how many facts its
  round already has (fairness: a rolling digest re-selects among its previous fact
  lines and the new sentences, so newer rounds can displace older ones only by being
  more informative, never merely by being many);
- *presentation*: story order, consecutive sentences of one round and speaker on one line.

Callers pass only the turns the audience may read, and the previous digest of that same
audience; nothing else is read. No clock, no randomness: ties fall to story order.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from context_engine.memory._text import clip_words, sentences
from context_engine.memory.vocabulary import NAME_ZIPF, RARE_ZIPF, STOPWORDS, _words, zipf
from context_engine.tokens import count
from context_engine.types import TurnView

FACT_WORDS = 40  # a longer sentence is clipped: one turn's monologue cannot fill the digest
RARE_CEILING = 4.5  # a word at least this common (Zipf) adds nothing to a sentence's score
NAME_WEIGHT = 1.5
NUMBER_WEIGHT = 2.0
DATE_WEIGHT = 2.0
DECISION_WEIGHT = 2.0
FIRST_MENTION_WEIGHT = 2.0
MIN_SCORE = 1.0  # below this a sentence holds nothing worth a line ("Yes, let's go.")
MIN_NOVELTY = 0.15  # a sentence whose weight the chosen facts mostly hold is redundant
ROUND_DECAY = 0.7  # each fact a round already has scales its next candidate's rank by this
MIN_LINE_TOKENS = 6
PRIVATE_KINDS = {"whisper": "whisper", "gm_note": "GM note"}

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]|[A-Za-z]|\d[\d,.:/-]*\d|\d")
_FACT_LINE = re.compile(r"^-\s*R(\d+)\s+([^:]+?):\s*(.+)$")
DATE_WORDS = frozenset(
    _words(
        """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday
    friday saturday sunday yesterday tomorrow tonight today week weekend month year
    """
    )
)
# Decisions and changes of state, in the forms a narration uses.
DECISION_WORDS = frozenset(
    _words(
        """
    decide decides decided choose chooses chose chosen agree agrees agreed accept accepts
    accepted refuse refuses refused swear swears swore sworn promise promises promised vow
    vows vowed vote votes voted sign signs signed buy buys bought sell sells sold give
    gives gave take takes took steal steals stole stolen find finds found lose loses lost
    hide hides hid hidden die dies died dead kill kills killed falls fell marry marries
    married move moves moved leave leaves left join joins joined become becomes became
    start starts started quit quits hire hires hired fire fires fired open opens opened
    close closes closed win wins won destroy destroys destroyed burn burns burned burnt
    arrive arrives arrived discover discovers discovered reveal reveals revealed betray
    betrays betrayed break breaks broke broken build builds built begin begins began
    finish finishes finished adopt adopts adopted learn learns learned
    """
    )
)


class Fact(NamedTuple):
    """One candidate sentence with what it is worth and where it stands in the story.
    (A named tuple: a fold makes thousands, and a frozen dataclass is slow to build.)"""

    order: tuple  # story order: (round, 0 = previous digest / 1 = new turn, position…)
    round: int
    label: str  # the speaker, with the kind for private turns: "Thorin (whisper)"
    text: str
    score: float
    rank: float
    weights: tuple[tuple[str, float], ...]  # each informative word and its weight
    total: float  # the weights' sum


@lru_cache(maxsize=65536)
def _word_info(word: str, first: bool) -> tuple[str, float, bool]:
    """(key, weight, mentionable) of one word as written; weight 0 means uninformative."""
    key = word.lower().strip("'’-")
    if not key or key in STOPWORDS:
        return key, 0.0, False
    if word[0].isdigit():
        return key, NUMBER_WEIGHT, False
    frequency = zipf(key)
    weight = max(0.0, RARE_CEILING - frequency)
    if word[0].isupper() and (not first or frequency < NAME_ZIPF):
        return key, weight + NAME_WEIGHT, True
    return key, weight, frequency < RARE_ZIPF


class _Analysis(NamedTuple):
    weights: tuple[tuple[str, float], ...]  # informative words, sorted, with their weights
    weighted: frozenset[str]  # the same words as a set
    total: float  # their weights' sum
    mentionable: frozenset[str]  # names and rare words (for first mentions)
    bonus: float  # a date, a decision or change of state
    length: int  # words


@lru_cache(maxsize=16384)
def _analyse(text: str) -> _Analysis:
    """What one sentence holds, apart from its place in the story. Cached: a rolling
    digest rescores its kept lines at each fold."""
    weights: dict[str, float] = {}
    mentionable: set[str] = set()
    keys: set[str] = set()
    words = _WORD.findall(text)
    for position, word in enumerate(words):
        key, weight, mention = _word_info(word, position == 0)
        keys.add(key)
        if weight > 0:
            weights[key] = max(weight, weights.get(key, 0.0))
        if mention:
            mentionable.add(key)
    bonus = DATE_WEIGHT * bool(keys & DATE_WORDS) + DECISION_WEIGHT * bool(keys & DECISION_WORDS)
    return _Analysis(
        weights=tuple(sorted(weights.items())),
        weighted=frozenset(weights),
        total=sum(weights.values()),
        mentionable=frozenset(mentionable),
        bonus=bonus,
        length=len(words),
    )


def _fact(order, round_, label, text, speakers: frozenset[str], seen: set[str]) -> Fact:
    """Score one sentence; ``seen`` (names met earlier in story order) is updated.
    Speakers' own names are no information: every line already starts with one."""
    analysis = _analyse(text)
    weights, total = analysis.weights, analysis.total
    if not speakers.isdisjoint(analysis.weighted):
        weights = tuple(item for item in weights if item[0] not in speakers)
        total = sum(weight for _, weight in weights)
    mentionable = analysis.mentionable - speakers
    first = len(mentionable - seen)
    seen |= mentionable
    score = total + analysis.bonus + FIRST_MENTION_WEIGHT * first
    return Fact(
        order=order,
        round=round_,
        label=label,
        text=text,
        score=score,
        rank=score / math.sqrt(max(analysis.length, 6)),
        weights=weights,
        total=total,
    )


def _label(turn: TurnView) -> str:
    private = PRIVATE_KINDS.get(turn.kind)
    return f"{turn.speaker} ({private})" if private else turn.speaker


def candidates(previous_lines: Sequence[str], turns: Sequence[TurnView]) -> list[Fact]:
    """The previous digest's fact lines, then the new turns' sentences, in story order
    (exact repeats left out)."""
    raw: list[tuple[tuple, int, str, str]] = []
    for position, line in enumerate(previous_lines):
        match = _FACT_LINE.match(line.strip())
        if match:
            round_, label = int(match.group(1)), match.group(2).strip()
            for index, text in enumerate(sentences(match.group(3))):
                raw.append(((round_, 0, position, index), round_, label, text))
    speakers = frozenset(
        {t.speaker.lower() for t in turns} | {item[2].split(" (")[0].lower() for item in raw}
    )
    for turn in turns:
        for index, sentence in enumerate(sentences(turn.content)):
            text = (
                sentence if sentence.count(" ") < FACT_WORDS else clip_words(sentence, FACT_WORDS)
            )
            raw.append(((turn.round, 1, turn.seq, turn.id, index), turn.round, _label(turn), text))
    raw.sort(key=lambda item: item[0])
    seen_names: set[str] = set()
    seen_lines: set[tuple[int, str, str]] = set()
    facts = []
    for order, round_, label, text in raw:
        identity = (round_, label, text)
        if identity in seen_lines:
            continue
        seen_lines.add(identity)
        facts.append(_fact(order, round_, label, text, speakers, seen_names))
    return facts


def _written_out(text: str, covered_lower: str) -> bool:
    """Is ``text`` already in the template's lines (which clip at 16 or 30 words)?"""
    head = " ".join(text.split()[:4]).lower()
    if head not in covered_lower:
        return False
    return any(clip_words(text, limit).rstrip("…").lower() in covered_lower for limit in (16, 30))


def _novelty(fact: Fact, held: dict[str, float]) -> float:
    if fact.total <= 0:
        return 1.0
    return sum(weight for word, weight in fact.weights if word not in held) / fact.total


def select(facts: Sequence[Fact], budget: int, *, covered: str = "") -> list[Fact]:
    """The most informative, least redundant facts within ``budget`` tokens, story order.
    A sentence the template already wrote out (``covered``: its hinge and anchor lines)
    is not repeated.

    Lazy greedy: a fact's rank only falls as others are chosen, so a popped fact whose
    refreshed rank still beats the next stored one is the best choice now.
    """
    heap = [(-fact.rank, fact.order, index) for index, fact in enumerate(facts)]
    heapq.heapify(heap)
    covered_lower = covered.lower()
    held: dict[str, float] = {}
    per_round: dict[int, int] = {}
    chosen: list[Fact] = []
    left = budget
    while heap and left >= MIN_LINE_TOKENS:
        _, order, index = heapq.heappop(heap)
        fact = facts[index]
        novelty = _novelty(fact, held)
        if chosen and (fact.score < MIN_SCORE or novelty < MIN_NOVELTY):
            continue
        if _written_out(fact.text, covered_lower):
            continue
        rank = fact.rank * novelty * ROUND_DECAY ** per_round.get(fact.round, 0)
        if heap and rank < -heap[0][0]:
            heapq.heappush(heap, (-rank, order, index))
            continue
        cost = count(f"- R{fact.round} {fact.label}: {fact.text}") + 1
        if cost > left:
            continue
        chosen.append(fact)
        left -= cost
        per_round[fact.round] = per_round.get(fact.round, 0) + 1
        held.update(fact.weights)
    return sorted(chosen, key=lambda fact: fact.order)


def render_facts(facts: Sequence[Fact]) -> list[str]:
    """One line per run of facts with the same round and speaker, in the given order."""
    lines: list[str] = []
    last: tuple[int, str] | None = None
    for fact in facts:
        if (fact.round, fact.label) == last:
            lines[-1] += " " + fact.text
        else:
            lines.append(f"- R{fact.round} {fact.label}: {fact.text}")
        last = (fact.round, fact.label)
    return lines


def key_facts(facts: Sequence[Fact], *, budget: int, covered: str = "") -> list[str]:
    """The Key Facts lines chosen from ``facts`` (`candidates`): at most ``budget`` tokens
    once joined (see the module doc)."""
    chosen = select(facts, budget, covered=covered)
    lines = render_facts(chosen)
    while chosen and count("\n".join(lines)) > budget:  # merging rarely costs a token more
        chosen.remove(min(chosen, key=lambda fact: (fact.rank, fact.order)))
        lines = render_facts(chosen)
    return lines
