"""BM25 ranking (SPEC §5.8): how passive retrieval, ``/search`` and the Arena's floor rank.

Two shapes of one formula (Okapi BM25, ``K1`` and ``B`` below):

- `rank_postings` ranks a role's readable turns from *postings*: for each query word,
  the readable turns that contain it (newest first, at most `DF_CAP`) with their token
  counts. The database's term rows give them (PostgreSQL and SQLite alike, see
  `campaigns.reads.search`), and the Arena's replay gives them from memory
  (`postings_of`).
  Term frequency is presence (a turn contains the word or not): the indexes answer "which
  turns", and turns are short. The collection size is the fixed `REFERENCE_DOCS`, so
  the ranking needs no count of the role's turns and nothing about turns the role
  cannot read: every input is a readable turn.
- `Bm25Index` is classic BM25 (term frequencies, the true collection size) over a list
  of texts: the Arena's ``bm25`` reference row, the floor any strategy must reach.

Queries (`make_query`) weigh the input's own words fully, the newest turns' rarer
words lightly (what the scene is about), and participant names and the campaign's most
frequent words down: a name alone says little about which turn answers a question.

Pure and deterministic: every sort has a tie-breaker.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from heapq import nlargest, nsmallest
from operator import itemgetter
from typing import NamedTuple

from context_engine.textops import STOPWORDS

K1 = 1.2
B = 0.75
DF_CAP = 200  # readable matches counted (and ranked) per query word
REFERENCE_DOCS = 1_000  # the collection size `rank_postings` assumes (a campaign's order)
MAX_INPUT_WORDS = 16
MAX_CONTEXT_WORDS = 8
INPUT_WEIGHT = 1.0
CONTEXT_WEIGHT = 0.1
NAME_FACTOR = 0.3  # participant names count this much of their word's weight
MIN_WORD = 3
# Scores are ordered rounded to 9 decimals; two scores further apart than this never tie.
TIE_MARGIN = 2e-9

_WORD = re.compile(r"[a-z0-9]+")
# Words of the newest turns that say what the scene is about are rarer than these; the
# input's own words are kept unless they are stopwords.
CONTEXT_COMMON_ZIPF = 4.5


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light, deterministic English stemmer (plural and verb endings).

    It only has to agree with itself: the replay and the floor use it for term identity,
    while the databases stem with their own (Porter / Snowball) rules when matching.
    """
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("edly", ""), ("ed", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)] + keep
            if suffix in ("ing", "ed", "edly") and len(base) > 3 and base[-1] == base[-2]:
                base = base[:-1]  # "stopped" -> "stop"
            return base
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def surface_words(text: str) -> list[str]:
    """Lower-case words of ``text`` worth searching for, in order (safe for any FTS)."""
    return [w for w in _WORD.findall(text.lower()) if len(w) >= MIN_WORD and w not in STOPWORDS]


@lru_cache(maxsize=16384)
def terms(text: str) -> tuple[str, ...]:
    """Stemmed index terms of ``text``, in order, repeats kept (term frequency)."""
    return tuple(stem(w) for w in surface_words(text))


@dataclass(frozen=True)
class QueryTerm:
    word: str  # the surface word the database is asked for
    stem: str  # its term identity in memory
    weight: float


@dataclass(frozen=True)
class Query:
    terms: tuple[QueryTerm, ...]

    @property
    def words(self) -> list[str]:
        return [t.word for t in self.terms]

    def __bool__(self) -> bool:
        return bool(self.terms)


def make_query(
    input_text: str,
    context_texts: Sequence[str] = (),
    names: Iterable[str] = (),
    zipf=None,
) -> Query:
    """The query for ``input_text``, with the newest turns (``context_texts``) as context.

    ``zipf(word)`` (optional) is a word's general frequency; context words at or above
    `CONTEXT_COMMON_ZIPF` are left out, so only what is particular to the scene joins.
    ``names`` (participant roles) are weighted down wherever they appear.

    Kept per process (a pure function of its arguments): the pack loader and the engine
    both make each pack's query, and a pack built again makes the same one. ``names``
    are a set to the query, so they are keyed as one: the loader lists the participants
    in seat order and the engine by role, and the same query was made twice a pack.
    """
    return _make_query(input_text, tuple(context_texts), tuple(sorted(set(names))), zipf)


@lru_cache(maxsize=1024)
def _make_query(
    input_text: str, context_texts: tuple[str, ...], names: tuple[str, ...], zipf
) -> Query:
    low_names = {stem(n.lower()) for name in names for n in _WORD.findall(name.lower())}
    chosen: dict[str, QueryTerm] = {}

    def add(words: list[str], weight: float, limit: int) -> None:
        added = 0
        for word in words:
            key = stem(word)
            if key in chosen or added >= limit:
                continue
            factor = NAME_FACTOR if key in low_names else 1.0
            chosen[key] = QueryTerm(word, key, weight * factor)
            added += 1

    add(surface_words(input_text), INPUT_WEIGHT, MAX_INPUT_WORDS)
    context: list[str] = []
    for text in reversed(context_texts):  # newest first
        context += _scene_words(text, zipf)
    add(context, CONTEXT_WEIGHT, MAX_CONTEXT_WORDS)
    return Query(tuple(chosen.values()))


@lru_cache(maxsize=4096)
def _scene_words(text: str, zipf) -> tuple[str, ...]:
    """The words of a newest turn that may join a query (rarer than `CONTEXT_COMMON_ZIPF`),
    kept per text: after a new turn, three of a query's four context turns are the last
    query's."""
    return tuple(
        word for word in surface_words(text) if zipf is None or zipf(word) < CONTEXT_COMMON_ZIPF
    )


def idf(df: int, doc_count: int) -> float:
    """BM25's inverse document frequency (never negative)."""
    return math.log(1 + (doc_count - df + 0.5) / (df + 0.5))


def tf_part(tf: int, length: int, avg_length: float) -> float:
    norm = 1 - B + B * (length / avg_length if avg_length > 0 else 1.0)
    return tf * (K1 + 1) / (tf + K1 * norm)


class Posting(NamedTuple):
    """A readable turn that contains a query word (a named tuple: a pack reads a
    thousand of them at 50,000 turns, and a tuple is built several times faster)."""

    turn_id: int
    seq: int
    tokens: int


@dataclass(frozen=True)
class Scored:
    turn_id: int
    seq: int
    score: float


def rank_postings(
    query: Query, postings: Mapping[str, Sequence[Posting]], limit: int | None = None
) -> list[Scored]:
    """Turns ranked best first by BM25 over ``postings`` (keyed by `QueryTerm.word`);
    only the ``limit`` best when given (the same turns, in the same order, as the first
    ``limit`` of the full ranking).

    A word's document frequency is its number of postings (a word at `DF_CAP` is among
    the campaign's most frequent, and weighs next to nothing); lengths are the turns'
    token counts, averaged over the turns that match.
    """
    weighted = [
        (term.weight * idf(min(len(hits), DF_CAP), REFERENCE_DOCS), hits)
        for term in query.terms
        if (hits := postings.get(term.word))
    ]
    # A turn's (turn_id, seq, tokens), by id (C-level loops: ~1,300 postings at 50,000 turns).
    known: dict[int, Sequence[int]] = {}
    for _, hits in weighted:
        known.update(zip(map(itemgetter(0), hits), hits, strict=True))
    if not known:
        return []
    token_counts = list(map(itemgetter(2), known.values()))
    avg = sum(token_counts) / len(token_counts)
    # tf_part depends on a turn's length only: computed once per distinct length.
    parts = {tokens: tf_part(1, tokens, avg) for tokens in set(token_counts)}
    scores: dict[int, float] = {}
    get = scores.get
    for weight, hits in weighted:  # each turn's sum in query order, as ever
        for turn_id, _seq, tokens in hits:
            scores[turn_id] = get(turn_id, 0.0) + weight * parts[tokens]
    # Best score first, ties to the newer turn (then the id): a total order.
    bounded = limit is not None and 0 <= limit < len(scores)
    if bounded and limit > 0:
        # Only turns within rounding of the limit-th best score can be among the best
        # `limit` (scores are compared rounded to 9 decimals): keying every matched turn
        # (rounding each score) was half of ranking 1,300 postings.
        floor = nlargest(limit, scores.values())[-1] - TIE_MARGIN
        scores = {turn_id: score for turn_id, score in scores.items() if score >= floor}
    keyed = [
        (-round(score, 9), -known[turn_id][1], turn_id, score) for turn_id, score in scores.items()
    ]
    if bounded:
        keyed = nsmallest(limit, keyed)
    else:
        keyed.sort()
        keyed = keyed[:limit]
    return [Scored(turn_id, -neg_seq, score) for _, neg_seq, turn_id, score in keyed]


def postings_of(
    query: Query, docs: Sequence[tuple[int, int, str, int]]
) -> dict[str, list[Posting]]:
    """In-memory postings, as the database gives them: ``docs`` are readable
    ``(turn_id, seq, text, tokens)``; per word, the newest `DF_CAP` that contain it."""
    wanted = {t.stem: t.word for t in query.terms}
    out: dict[str, list[Posting]] = {t.word: [] for t in query.terms}
    for turn_id, seq, text, tokens in sorted(docs, key=lambda d: (-d[1], -d[0])):
        for key in set(terms(text)).intersection(wanted):
            bucket = out[wanted[key]]
            if len(bucket) < DF_CAP:
                bucket.append(Posting(turn_id, seq, tokens))
    return out


class Bm25Index:
    """Classic BM25 over ``docs`` (``(key, text)``): term frequencies, true collection size."""

    def __init__(self, docs: Sequence[tuple[object, str]]):
        self.keys = [key for key, _ in docs]
        self.tfs: list[dict[str, int]] = []
        self.lengths: list[int] = []
        df: dict[str, int] = {}
        for _, text in docs:
            counts: dict[str, int] = {}
            for term in terms(text):
                counts[term] = counts.get(term, 0) + 1
            self.tfs.append(counts)
            self.lengths.append(sum(counts.values()))
            for term in counts:
                df[term] = df.get(term, 0) + 1
        self.df = df
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0

    def rank(self, text: str) -> list[tuple[object, float]]:
        """Documents that share a term with ``text``, best first (ties: later first)."""
        query = sorted(set(terms(text)))
        n = len(self.keys)
        weights = {t: idf(self.df[t], n) for t in query if t in self.df}
        scored = []
        for index, counts in enumerate(self.tfs):
            score = sum(
                w * tf_part(counts[t], self.lengths[index], self.avg)
                for t, w in weights.items()
                if t in counts
            )
            if score > 0:
                scored.append((-round(score, 9), -index, self.keys[index], score))
        scored.sort(key=lambda s: (s[0], s[1]))
        return [(key, score) for _, _, key, score in scored]
