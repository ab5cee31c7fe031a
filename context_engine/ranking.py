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
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain, count
from typing import NamedTuple

import numpy as np

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
# A turn spoken by a participant the input names scores this much more than the same
# match said by anyone else ("When did Mara lose her job?": Mara's own turns answer),
# where its match alone scores at least as much (so it at most doubles).
SPEAKER_BONUS = 2.0
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
    # The participants the input names, as `speaker_code`s: their own turns rank higher.
    speakers: frozenset[int] = field(default=frozenset())

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
    ``names`` (participant roles) are weighted down wherever they appear; a participant
    the *input* names is also one of the query's `Query.speakers`, whose own turns score
    `SPEAKER_BONUS` more. Only the input counts: the newest turns name both sides of an
    exchange, and a bonus for both would cancel out.

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
    # Each participant's name words, stemmed once: weighted down wherever they appear, and
    # the participants whose words the input says are its speakers.
    name_stems = {name: {stem(n) for n in _WORD.findall(name.lower())} for name in names}
    low_names = set().union(*name_stems.values())
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

    said = surface_words(input_text)
    add(said, INPUT_WEIGHT, MAX_INPUT_WORDS)
    context: list[str] = []
    for text in reversed(context_texts):  # newest first
        context += _scene_words(text, zipf)
    add(context, CONTEXT_WEIGHT, MAX_CONTEXT_WORDS)
    said_stems = {stem(word) for word in said}
    speakers = frozenset(speaker_code(name) for name, own in name_stems.items() if own & said_stems)
    return Query(tuple(chosen.values()), speakers)


# Speakers as small integers, so postings stay one integer array: interned per process
# (the codes are never stored; the loader and the replay map names through here alike).
NO_SPEAKER = -1
_speaker_codes: dict[str, int] = {}
_next_code = count()


def speaker_code(name: str) -> int:
    """The integer that stands for the speaker ``name`` in postings (this process)."""
    found = _speaker_codes.get(name)
    if found is None:
        found = _speaker_codes.setdefault(name, next(_next_code))
    return found


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
    speaker: int = NO_SPEAKER  # its `speaker_code`


POSTING_WIDTH = len(Posting._fields)


class Scored(NamedTuple):
    """A ranked turn (a named tuple, as `Posting` is: a ranking makes ~40 a pack)."""

    turn_id: int
    seq: int
    score: float


# A word with no postings, as `as_postings` gives it (shared: read-only).
NO_POSTINGS = np.empty((0, POSTING_WIDTH), dtype=np.int64)
NO_POSTINGS.flags.writeable = False


def as_postings(hits: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    """A word's postings as the array `rank_postings` reads: one row ``(turn id, seq,
    tokens, speaker)`` per turn (`Posting`s, or tuples of their four fields), newest
    first (the loader's rows come as one already)."""
    if isinstance(hits, np.ndarray):
        return hits
    flat = chain.from_iterable(hits)
    size = POSTING_WIDTH * len(hits)
    return np.fromiter(flat, dtype=np.int64, count=size).reshape(-1, POSTING_WIDTH)


def rank_postings(
    query: Query,
    postings: Mapping[str, Sequence[Posting] | np.ndarray],
    limit: int | None = None,
) -> list[Scored]:
    """Turns ranked best first by BM25 over ``postings`` (keyed by `QueryTerm.word`; a
    word's postings are `Posting` tuples or their `as_postings` array); only the
    ``limit`` best when given (the same turns, in the same order, as the first ``limit``
    of the full ranking).

    A word's document frequency is its number of postings (a word at `DF_CAP` is among
    the campaign's most frequent, and weighs next to nothing); lengths are the turns'
    token counts, averaged over the turns that match. A turn spoken by one of the
    query's `Query.speakers` adds `SPEAKER_BONUS` to its score, once, when that score
    is at least `SPEAKER_BONUS`.

    The arithmetic runs over all postings at once (NumPy: ~1,500 of them at 50,000
    turns), each operation the one the formula names in its order, so every score is
    the same float as the term-by-term sum: a turn's contributions are added in query
    order, from 0.0 (`np.bincount` adds its weights in input order). The ranking's keys
    and ties are then decided on the few turns that can be among the best, in Python.
    """
    ranked = _ranked(query, postings, limit)
    return [Scored(turn_id, -neg_seq, score) for _, neg_seq, turn_id, score in ranked]


def ranked_ids(
    query: Query,
    postings: Mapping[str, Sequence[Posting] | np.ndarray],
    limit: int | None = None,
) -> list[int]:
    """The turn ids of `rank_postings`, best first (no `Scored` made: the loader's hits)."""
    return [turn_id for _, _, turn_id, _ in _ranked(query, postings, limit)]


def _ranked(
    query: Query,
    postings: Mapping[str, Sequence[Posting] | np.ndarray],
    limit: int | None,
) -> list[tuple[float, int, int, float]]:
    """`rank_postings`' sort keys ``(-rounded score, -seq, turn id, score)``, in order."""
    if limit is not None and limit < 0:
        raise ValueError("limit must be at least 0")
    weights: list[float] = []
    arrays: list[np.ndarray] = []
    for term in query.terms:
        hits = postings.get(term.word)
        if hits is None or not len(hits):
            continue
        array = as_postings(hits)
        weights.append(term.weight * idf(min(len(array), DF_CAP), REFERENCE_DOCS))
        arrays.append(array)
    if not arrays or limit == 0:
        return []
    every = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
    ids, first, turn_of = np.unique(every[:, 0], return_index=True, return_inverse=True)
    lengths = every[:, 2]
    avg = int(lengths[first].sum()) / len(ids)  # over distinct turns, as a Python float
    # tf_part(1, tokens, avg) for every posting, operation by operation.
    norm = (1 - B) + B * (lengths / avg) if avg > 0 else np.full(len(every), 1 - B + B * 1.0)
    part = (1 * (K1 + 1)) / (1 + K1 * norm)
    per_posting = np.repeat(np.array(weights), [len(a) for a in arrays]) * part
    scores = np.bincount(turn_of, weights=per_posting, minlength=len(ids))
    if query.speakers:
        # A named speaker's turn gains the bonus only where its words alone are worth as
        # much: a turn that shares just a common or a context word stays where it was.
        speaker = every[first, 3]
        named = np.zeros(len(ids), dtype=bool)
        for code in query.speakers:  # one or two: cheaper than np.isin's sort
            named |= speaker == code
        scores = scores + SPEAKER_BONUS * (named & (scores >= SPEAKER_BONUS))
    # Best score first, ties to the newer turn (then the id): a total order.
    seqs = every[first, 1]
    bounded = limit is not None and limit < len(ids)
    if bounded:
        # Only turns within rounding of the limit-th best score can be among the best
        # `limit` (scores are compared rounded to 9 decimals).
        floor = float(np.partition(scores, len(ids) - limit)[len(ids) - limit]) - TIE_MARGIN
        near = np.flatnonzero(scores >= floor)
        scores, seqs, ids = scores[near], seqs[near], ids[near]
    keyed = [
        (-round(score, 9), -seq, turn_id, score)
        for score, seq, turn_id in zip(scores.tolist(), seqs.tolist(), ids.tolist(), strict=True)
    ]
    keyed.sort()  # the turns near the limit-th score: one sort in C, then the head
    if bounded:
        del keyed[limit:]
    return keyed


def postings_of(
    query: Query, docs: Sequence[tuple[int, int, str, int, str]]
) -> dict[str, list[Posting]]:
    """In-memory postings, as the database gives them: ``docs`` are readable
    ``(turn_id, seq, text, tokens, speaker)``; per word, the newest `DF_CAP` that
    contain it."""
    wanted = {t.stem: t.word for t in query.terms}
    out: dict[str, list[Posting]] = {t.word: [] for t in query.terms}
    for turn_id, seq, text, tokens, speaker in sorted(docs, key=lambda d: (-d[1], -d[0])):
        for key in set(terms(text)).intersection(wanted):
            bucket = out[wanted[key]]
            if len(bucket) < DF_CAP:
                bucket.append(Posting(turn_id, seq, tokens, speaker_code(speaker)))
    return out


class Bm25Index:
    """Classic BM25 over ``docs`` (``(key, text)``): term frequencies, true collection size."""

    def __init__(self, docs: Sequence[tuple[object, str]]):
        self.keys = [key for key, _ in docs]
        self.lengths: list[int] = []
        # term -> (document index, term frequency), documents in order: a query scores
        # only the documents that hold one of its terms.
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for index, (_, text) in enumerate(docs):
            counts: dict[str, int] = {}
            for term in terms(text):
                counts[term] = counts.get(term, 0) + 1
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings.setdefault(term, []).append((index, tf))
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.lengths else 0.0

    def rank(self, text: str) -> list[tuple[object, float]]:
        """Documents that share a term with ``text``, best first (ties: later first).

        A document's score adds its terms' parts in the query's term order (sorted),
        from 0, as the formula is written; only documents holding a query term are
        visited."""
        query = sorted(set(terms(text)))
        n = len(self.keys)
        scores: dict[int, float] = {}
        for term in query:
            found = self.postings.get(term)
            if found is None:
                continue
            weight = idf(len(found), n)  # the term's document frequency
            for index, tf in found:
                part = weight * tf_part(tf, self.lengths[index], self.avg)
                scores[index] = scores.get(index, 0) + part
        scored = [
            (-round(score, 9), -index, self.keys[index], score)
            for index, score in scores.items()
            if score > 0
        ]
        scored.sort(key=lambda s: (s[0], s[1]))
        return [(key, score) for _, _, key, score in scored]
