"""Small text helpers shared by the pack builders.

Token counting is the hot path of pack building, so repeated strings (line prefixes,
rules, bios, the digest) are counted once per process through an LRU cache. The cache
is keyed by the string itself, so it cannot change a result, only skip work.
"""

from __future__ import annotations

import re
from functools import lru_cache

from context_engine import tokens

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")

# Common words that carry no retrieval signal. Deliberately small: precision matters
# less than determinism here, and the input's own words dominate the score.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just let me more most my myself no nor not now of off on
    once only or other our ours out over own same she should so some such than that the
    their theirs them then there these they this those through to too under until up upon
    very was we were what when where which while who whom why will with would you your
    yours yourself into onto unto shall may might must said says say tell told like
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@lru_cache(maxsize=8192)
def count(text: str) -> int:
    """``tokens.count`` with a per-process cache (pure, so caching is safe)."""
    return tokens.count(text)


def count_uncached(text: str) -> int:
    """For long one-off texts (a rendered section) that would only churn the cache."""
    return tokens.count(text)


def first_sentence(text: str, max_words: int = 20) -> str:
    """The first sentence of ``text``, cut to ``max_words`` words with an ellipsis.

    Used for condensed lines (scene recap, triage bullets, warm tier) so that a
    condensed turn is always a prefix of what the agent could read in full.
    """
    flat = " ".join(text.split())
    if not flat:
        return ""
    parts = _SENTENCE_END.split(flat, maxsplit=1)
    sentence = parts[0]
    words = sentence.split(" ")
    if len(words) > max_words:
        return " ".join(words[:max_words]) + "…"
    if len(parts) > 1:
        return sentence + " …"
    return sentence


def words(text: str) -> list[str]:
    """Words of ``text`` in order (letters, inner hyphens and apostrophes)."""
    return _WORD.findall(text)


_NAME = re.compile(r"(?<![.!?:\n]\s)(?<!^)(?<![\w'-])([A-Z][A-Za-z'\-]*[A-Za-z])")


def proper_nouns(text: str) -> set[str]:
    """Lower-cased capitalised words that are not sentence-initial or common words.

    "The gate of Ashfall" gives {"ashfall"}: "The" starts the sentence. Names that
    only ever open a sentence are missed, which costs recall, never determinism.
    """
    return {w.lower() for w in _NAME.findall(text) if len(w) >= 3 and w.lower() not in STOPWORDS}


@lru_cache(maxsize=4096)
def _term_pattern(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + re.escape(term.lower()) + r"(?![\w-])")


def mentions(term: str, haystack_lower: str) -> bool:
    """Is ``term`` named in ``haystack_lower`` (already lower-cased), as a whole word?"""
    term = term.strip()
    if not term:
        return False
    start = haystack_lower.find(term.lower())
    if start < 0:  # fast reject before the regex
        return False
    # No match starts before the term's first occurrence, so the regex starts there (its
    # lookbehind still sees the character before): scanning a whole window from its
    # start was most of `sections.named_lore_ids`.
    return _term_pattern(term).search(haystack_lower, start) is not None


def tail_lines_within(lines: list[str], max_tokens: int, header: str = "") -> int:
    """How many leading lines to drop so ``header + lines`` fits ``max_tokens``.

    Used where the newest material is at the end (a transcript) and a hard cut must
    keep the tail, not the head.
    """
    costs = [count(line) + 1 for line in lines]
    total = (count(header) + 1 if header else 0) + sum(costs)
    dropped = 0
    while dropped < len(lines) and total > max_tokens:
        total -= costs[dropped]
        dropped += 1
    return dropped
