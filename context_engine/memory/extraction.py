"""World Bible hydrator rules (SPEC §5.5): which words in a turn are lore, and what they mean.

Candidates come from surface rules, not a model, so the offline default finds the same
terms every time: capitalised multi-word names, CamelCase, ALL_CAPS, rare capitalised
words, coined lowercase hyphenated compounds (``void-chisel``) and rare lowercase phrases
that recur across turns (``ashfern tonic``). Ordinary vocabulary is told apart with
wordfreq. Definitions come from a model when one is configured, else from the sentence
where the term first appears; either way only from text the entry's audience may read.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from context_engine.llm.base import LLMClient, call_with_retries, is_offline
from context_engine.memory._text import clip_words, first_sentence, sentences, squash
from context_engine.memory.tabletalk import is_contraction, is_table_phrase, is_table_word
from context_engine.memory.vocabulary import (
    COMMON_ZIPF,
    NAME_ZIPF,
    RARE_ZIPF,
    STOPWORDS,
    TITLES,
    VERY_COMMON_ZIPF,
    guess_category,
    is_coined_compound,
    singular,
    zipf,
)

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:['’][A-Za-z]+)?(?:-[A-Za-z0-9]+)*")
_CAMEL = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z]+)+$")
_CONNECTORS = frozenset({"of", "the", "de", "du", "von", "van", "al", "la", "le"})
_OPENERS = set('"“‘(:—;')
_ROMAN = re.compile(r"^[IVXLCDM]+$")


@dataclass(frozen=True)
class Candidate:
    """A term found in a text, its category guess and the sentence it appears in."""

    term: str
    category: str  # npc | location | artifact | faction | term
    sentence: str

    @property
    def key(self) -> str:
        return merge_key(self.term)


def _strip_possessive(word: str) -> str:
    return re.sub(r"['’]s$", "", word)


@lru_cache(maxsize=65536)
def _kind(word: str) -> str:
    letters = word.replace("_", "").replace("-", "")
    if letters.isupper() and len(letters) >= 2:
        return "caps"
    if _CAMEL.match(word):
        return "camel"
    if word[0].isupper():
        return "cap"
    return "lower"


def _ignorable_initial(words: list[str]) -> bool:
    """Is the first word capitalised only because it starts the sentence?

    Function words, -ly adverbs and very common words are; so is any ordinary word
    directly before a title or a rare name ("Yesterday Mira", "Ask Lord Vane"). An
    ordinary word before another ordinary capitalised word stays ("Iron Choir"), and so
    does one joined by "of" ("Order of the Ember"), while one before "the" is a verb.
    """
    lower = words[0].lower()
    if lower in TITLES:
        return False
    if lower in STOPWORDS or lower.endswith("ly") or zipf(lower) >= VERY_COMMON_ZIPF:
        return True
    if len(words) > 1 and zipf(lower) >= NAME_ZIPF:
        following = words[1].lower()
        # "Steal the Tide Codex": an imperative before its object, not a name.
        return following == "the" or following in TITLES or zipf(following) < NAME_ZIPF
    return False


def _breaks(word: str) -> bool:
    """A token that can neither be part of a name nor join two parts of one."""
    return word == "I" or is_contraction(word) or is_table_word(word)


def _hits_in_sentence(sentence: str, ignore: set[str]) -> list[tuple[str, bool]]:
    """(term, at_sentence_start) for each candidate in one sentence, in order."""
    tokens = list(_TOKEN.finditer(sentence))
    found: list[tuple[str, bool]] = []

    def initial(i: int) -> bool:
        return i == 0 or bool(_OPENERS & set(sentence[tokens[i - 1].end() : tokens[i].start()]))

    def joined(i: int) -> bool:  # token i follows token i-1 with only spaces between
        return i > 0 and sentence[tokens[i - 1].end() : tokens[i].start()].isspace()

    i = 0
    while i < len(tokens):
        word = tokens[i].group()
        kind = _kind(word)
        if kind == "lower":
            if "-" in word and is_coined_compound(word) and not is_table_phrase(word):
                found.append((word, False))
            i += 1
            continue
        if _breaks(word) and not (kind == "caps" and "_" in word):
            i += 1
            continue
        if kind == "caps":
            bare = word.replace("_", "").replace("-", "")
            coined = any(ch.isdigit() or ch == "_" for ch in word) or zipf(bare) < NAME_ZIPF
            if len(bare) >= 3 and not _ROMAN.match(bare) and coined and word not in ignore:
                found.append((word, initial(i)))
            i += 1
            continue
        # A run of capitalised words, allowing connectors ("Order of the Ember").
        run, start = [i], i
        j = i + 1
        while j < len(tokens) and joined(j):
            nxt = tokens[j].group()
            if _breaks(nxt):
                break
            if _kind(nxt) in ("cap", "camel"):
                run.append(j)
                j += 1
                continue
            k = j
            while k < len(tokens) and joined(k) and tokens[k].group() in _CONNECTORS:
                k += 1
            if (
                k > j
                and k < len(tokens)
                and joined(k)
                and _kind(tokens[k].group()) == "cap"
                and not _breaks(tokens[k].group())
            ):
                run.extend(range(j, k + 1))
                j = k + 1
                continue
            break
        i = j
        if _ampersand(sentence, tokens, run[0], run[-1]):
            continue  # "Geek & Sundry", "Dungeons & Dragons": a company or product
        words = [tokens[n].group() for n in run]
        at_start = initial(start)
        if at_start and _ignorable_initial(words):
            words = words[2:] if len(words) > 1 and words[1] == "the" else words[1:]
            at_start = False
        while words and words[0].lower() in _CONNECTORS:
            words = words[1:]
        if not words:
            continue
        words[-1] = _strip_possessive(words[-1])
        term = " ".join(words)
        if term in ignore or term == "I" or is_table_phrase(term):
            continue
        if len(words) > 1 and words[0] in ignore:
            continue  # "Taliesin Jaffe" beside the role Taliesin: a person at the table
        if len(words) > 1 or _kind(words[0]) == "camel" or zipf(words[0]) < NAME_ZIPF:
            found.append((term, at_start))
    return found


def _ampersand(sentence: str, tokens: list, first: int, last: int) -> bool:
    """Is the run of tokens first..last joined to a neighbour by "&"?"""
    before = sentence[tokens[first - 1].end() : tokens[first].start()] if first > 0 else ""
    after = (
        sentence[tokens[last].end() : tokens[last + 1].start()] if last + 1 < len(tokens) else ""
    )
    return before.strip() == "&" or after.strip() == "&"


def _candidates_in_sentence(sentence: str, ignore: set[str]) -> list[str]:
    return [term for term, _ in _hits_in_sentence(sentence, ignore)]


def extract_candidates(text: str, *, ignore: Iterable[str] = ()) -> list[Candidate]:
    """Lore candidates in ``text`` by rule, first occurrence of each merge key, in order.

    ``ignore`` holds names that are never lore, typically the experiment's role names.
    """
    skip = set(ignore)
    seen: set[str] = set()
    result: list[Candidate] = []
    for sentence in sentences(text):
        for term in _candidates_in_sentence(sentence, skip):
            key = merge_key(term)
            if key and key not in seen:
                seen.add(key)
                result.append(Candidate(term, guess_category(term, sentence), sentence))
    return result


def _lower_runs(text: str) -> list[list[str]]:
    """Runs of adjacent lowercase words, broken by punctuation and capitalised words."""
    runs: list[list[str]] = []
    for sentence in sentences(text):
        run: list[str] = []
        last_end = None
        for match in _TOKEN.finditer(sentence):
            word = match.group()
            gap = sentence[last_end : match.start()] if last_end is not None else " "
            if _kind(word) != "lower" or not (gap.isspace() or last_end is None):
                if len(run) > 1:
                    runs.append(run)
                run = []
            if _kind(word) == "lower":
                run.append(word)
            last_end = match.end()
        if len(run) > 1:
            runs.append(run)
    return runs


def _qualifies(phrase: tuple[str, ...]) -> bool:
    if phrase[0] in STOPWORDS or phrase[-1] in STOPWORDS:
        return False
    return min(zipf(word) for word in phrase) < RARE_ZIPF


def recurring_phrases(texts: Sequence[str], min_count: int = 2) -> list[str]:
    """Rare lowercase multi-word phrases that occur in at least ``min_count`` texts.

    Keeps the maximal repeats (``drinks ashfern tonic`` over ``drinks ashfern`` when they
    always co-occur), then trims common words off the left edge (verbs, adjectives:
    ``drinks``), so the term itself remains (``ashfern tonic``). In first-seen order.
    """
    counts: dict[tuple[str, ...], int] = {}
    order: dict[tuple[str, ...], int] = {}
    for text in texts:
        in_text: set[tuple[str, ...]] = set()
        for run in _lower_runs(text):
            for size in (2, 3, 4):
                for start in range(len(run) - size + 1):
                    phrase = tuple(run[start : start + size])
                    if phrase not in in_text and _qualifies(phrase):
                        in_text.add(phrase)
                        order.setdefault(phrase, len(order))
        for phrase in in_text:
            counts[phrase] = counts.get(phrase, 0) + 1
    frequent = {p: c for p, c in counts.items() if c >= min_count}

    def contained(small: tuple[str, ...], big: tuple[str, ...]) -> bool:
        return len(small) < len(big) and any(
            big[i : i + len(small)] == small for i in range(len(big) - len(small) + 1)
        )

    maximal = [
        p
        for p in frequent
        if not any(contained(p, q) and frequent[q] >= frequent[p] for q in frequent)
    ]
    result: list[str] = []
    seen: set[str] = set()
    for phrase in sorted(maximal, key=order.__getitem__):
        words = list(phrase)
        while (
            len(words) > 2
            and zipf(words[0]) >= COMMON_ZIPF
            and min(zipf(w) for w in words[1:]) < RARE_ZIPF
        ):
            words = words[1:]
        if len(words) >= 2 and zipf(words[0]) >= COMMON_ZIPF and zipf(words[1]) < RARE_ZIPF:
            continue  # "drinks ashfern": a verb before a lone rare word is not a term
        text = " ".join(words)
        if text not in seen and _qualifies(tuple(words)):
            seen.add(text)
            result.append(text)
    return result


def _key_words(text: str) -> list[str]:
    normal = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    normal = re.sub(r"'s\b", "", normal)
    return re.findall(r"[^\W_]+", normal)


def merge_key(term: str) -> str:
    """Normal form under which near-duplicates merge.

    Case-folded, possessive and leading article dropped, hyphens and underscores as
    spaces, last word singular: "the Geometers", "Geometers" and "Geometer" → "geometer".
    """
    words = _key_words(term)
    while len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    if words:
        words[-1] = singular(words[-1])
    return " ".join(words)


def mentions(term: str, text: str) -> bool:
    """Whether ``text`` mentions ``term`` under its merge key (plural, case, article)."""
    target = merge_key(term).split()
    if not target:
        return False
    words = _key_words(text)
    size = len(target)
    for start in range(len(words) - size + 1):
        window = words[start : start + size]
        if window[:-1] == target[:-1] and singular(window[-1]) == target[-1]:
            return True
    return False


def sentences_mentioning(term: str, text: str) -> list[str]:
    return [sentence for sentence in sentences(text) if mentions(term, sentence)]


DEFINITION_SCHEMA = {
    "type": "object",
    "properties": {"definition": {"type": "string"}},
    "required": ["definition"],
}
_DEFINE_SYSTEM = (
    "You keep the glossary of a tabletop role-playing campaign. Define the term in one "
    "sentence, using only how it is used in the sentences given; do not invent facts. "
    'Answer as JSON: {"definition": "..."}.'
)


# A definition is one sentence of at most ~40 words; its JSON fits well inside this.
DEFINITION_OUTPUT_TOKENS = 200


def define_term_with_method(
    term: str,
    sentences_: Sequence[str],
    *,
    client: LLMClient | None,
    attempts: int = 2,
    sleep: Callable[[float], None] = time.sleep,
    max_words: int = 40,
) -> tuple[str, str]:
    """(definition, method) with method ``llm`` or ``first_use``. Never raises."""
    usable = [squash(s) for s in sentences_ if s and s.strip()]
    if not usable:
        return "", "first_use"
    first_use = clip_words(usable[0], max_words * 2)
    if client is None or is_offline(client):
        return first_use, "first_use"
    quoted = "\n".join(f"- {s}" for s in list(dict.fromkeys(usable))[:5])
    messages = [
        {"role": "system", "content": _DEFINE_SYSTEM},
        {"role": "user", "content": f"Term: {term}\nSentences:\n{quoted}"},
    ]
    try:
        data = call_with_retries(
            lambda: client.complete_json(
                messages, schema=DEFINITION_SCHEMA, max_output_tokens=DEFINITION_OUTPUT_TOKENS
            ),
            attempts=attempts,
            sleep=sleep,
        )
        definition = first_sentence(str(data.get("definition", "")))
    except Exception:  # any model failure: the first-use sentence is always available
        return first_use, "first_use"
    if not definition:
        return first_use, "first_use"
    return clip_words(definition, max_words), "llm"


def define_term(
    term: str,
    sentences: Sequence[str],
    *,
    client: LLMClient | None,
    attempts: int = 2,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """One-sentence definition from how ``term`` was used in ``sentences``.

    Offline, or on any model failure, the first sentence it appears in. The caller must
    pass only sentences the entry's audience may read (see ``define_from_sources``).
    """
    return define_term_with_method(term, sentences, client=client, attempts=attempts, sleep=sleep)[
        0
    ]
