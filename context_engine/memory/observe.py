"""What one turn says about each candidate term, and when the evidence is enough.

The hydrator keeps, per experiment and audience, running statistics of these
observations (`VocabStats`), so hydrating a turn costs O(that turn): scan it, add its
observations, and ask `admits` whether a term has now earned an entry. Rules (issue 10):

- A lone capitalised word needs a capitalised use *mid-sentence* somewhere (a word that
  is only ever capitalised at a sentence start is just a sentence start) and two mentions.
- Anything else needs two mentions, except when a naming pattern introduces it ("a dwarf
  named Brannoc", "the city of Lowmere") or the DM tagged it.
- Coined phrases built from common words ("trust ledger") need three uses.
- Out-of-character talk is never a source (`tabletalk.strip_out_of_character`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from context_engine.memory._text import sentences
from context_engine.memory.extraction import _hits_in_sentence, _lower_runs, _qualifies, merge_key
from context_engine.memory.tabletalk import is_table_word, strip_out_of_character
from context_engine.memory.vocabulary import (
    COMMON_ZIPF,
    RARE_ZIPF,
    STOPWORDS,
    TITLES,
    guess_category,
    singular,
    zipf,
)

# Kinds, from the most lenient admission rule to the strictest.
NAME, COMPOUND, PHRASE, WORD, COMMON = "name", "compound", "phrase", "word", "common"
KIND_ORDER = (NAME, COMPOUND, PHRASE, WORD, COMMON)
_RIGHT_TRIM_ZIPF = 4.5  # a phrase does not end in a word this common
COMMON_USES = 3  # a coined phrase of common words must be used this many times

_CAP_NAME = r"[A-Z][\w'’-]*(?:\s+(?:of\s+(?:the\s+)?|the\s+)?[A-Z][\w'’-]*)*"
_NAMED = re.compile(
    r"\b(?:(?P<noun>[a-z]+)\s+)?(?:named|called|known\s+as|dubbed|titled|name\s+is)\s+"
    r"(?:the\s+)?(?P<name>" + _CAP_NAME + ")"
)
_PLACE_OF = re.compile(
    r"\b(?:the|a)\s+(?P<noun>city|town|village|hamlet|port|capital|kingdom|realm|land|lands|"
    r"isle|island|province|region|duchy|county|barony|valley|forest|fortress|citadel|"
    r"empire|dominion|republic)\s+of\s+(?P<name>" + _CAP_NAME + ")"
)
PLACE_NOUNS = frozenset(
    [
        "city",
        "town",
        "village",
        "hamlet",
        "port",
        "capital",
        "kingdom",
        "realm",
        "land",
        "lands",
        "isle",
        "island",
        "province",
        "region",
        "duchy",
        "county",
        "barony",
        "valley",
        "forest",
        "fortress",
        "citadel",
        "tavern",
        "inn",
        "ship",
        "river",
        "lake",
        "mountain",
        "mountains",
        "sea",
        "place",
        "keep",
        "tower",
        "castle",
        "temple",
        "street",
        "road",
        "district",
    ]
)
FACTION_NOUNS = frozenset(
    ["empire", "dominion", "republic", "guild", "order", "faction", "cult", "clan"]
)
ITEM_NOUNS = frozenset(
    [
        "sword",
        "blade",
        "dagger",
        "axe",
        "bow",
        "staff",
        "wand",
        "ring",
        "amulet",
        "book",
        "tome",
        "scroll",
        "potion",
        "gem",
        "stone",
        "item",
        "weapon",
        "artifact",
        "relic",
        "shield",
        "armor",
        "armour",
        "cloak",
    ]
)
_MOTION = (
    r"(?:go|goes|going|went|gone|travel\w*|ride|rode|riding|sail\w*|head\w*|return\w*|"
    r"walk\w*|march\w*|move\w*|fly|flew|flee\w*|fled|journey\w*|come|came|coming|arriv\w*|"
    r"back|bound|road|way|hail\w*|escap\w*|run|ran)"
)
_SPELL = r"(?:cast|casts|casting|spell|spells|incant\w*|invok\w*|summon\w*)"
_ITEM = (
    r"(?:wield\w*|draw\w*|drew|carr\w*|hold\w*|held|pocket\w*|grab\w*|equip\w*|pick\w* up|"
    r"picked up|found|finds|buy\w*|bought|sell\w*|sold|give\w*|gave|use\w*|drink\w*|drank)"
)
_MARKED = re.compile(r"[\"“‘'`*_]([a-z][a-z\- ]{2,60}?)[\"”’'`*_]")


@dataclass(frozen=True)
class Observation:
    """One turn's evidence about one term (merge key)."""

    key: str
    term: str
    kind: str
    category: str
    cued: bool  # the category comes from a cue in the sentence, not a guess
    sentence: str
    mentions: int  # sentences of the turn that name it
    mid: int  # capitalised uses not at a sentence start
    named: bool  # a naming pattern introduced it (or a DM tag)


def _cue(term: str, sentence: str) -> str | None:
    """The category a sentence's wording gives ``term``, or None when it says nothing."""
    t = re.escape(term)
    words = term.split()
    if term[:1].isupper() and words[0].lower() in TITLES and len(words) > 1:
        return "npc"
    if re.search(
        r"\b(?:in|at|into|inside|within|near|reach\w*|enter\w*)\s+(?:the\s+)?" + t + r"\b", sentence
    ):
        return "location"
    if re.search(
        _MOTION + r"\s+(?:\w+\s+)?(?:to|from|toward|towards)\s+(?:the\s+)?" + t + r"\b", sentence
    ):
        return "location"
    if re.search(
        _SPELL + r"\s+(?:a\s+|an\s+|the\s+|of\s+)?" + t + r"\b", sentence, re.I
    ) or re.search(t + r"\s+(?:spell|cantrip|ritual|incantation)\b", sentence, re.I):
        return "term"
    if re.search(
        _ITEM + r"\s+(?:a\s+|an\s+|the\s+|his\s+|her\s+|their\s+|my\s+)?" + t + r"\b",
        sentence,
        re.I,
    ):
        return "artifact"
    if re.search(t + r"\s+(?:check|save|saving throw|roll|modifier|bonus)\b", sentence, re.I):
        return "term"
    return None


def _naming(sentence: str) -> dict[str, str]:
    """merge key → category for names a naming pattern introduces in ``sentence``."""
    named: dict[str, str] = {}
    for match in _PLACE_OF.finditer(sentence):
        noun = match.group("noun").lower()
        category = "faction" if noun in FACTION_NOUNS else "location"
        named.setdefault(merge_key(match.group("name")), category)
    for match in _NAMED.finditer(sentence):
        noun = (match.group("noun") or "").lower()
        if noun in PLACE_NOUNS:
            category = "location"
        elif noun in FACTION_NOUNS:
            category = "faction"
        elif noun in ITEM_NOUNS:
            category = "artifact"
        else:
            category = "npc"
        named.setdefault(merge_key(match.group("name")), category)
    return named


@lru_cache(maxsize=65536)
def _content(word: str) -> bool:
    return (
        word not in STOPWORDS
        and len(word) >= 3
        and not word.endswith("ly")
        and not is_table_word(word)
    )


def _phrases_in_sentence(sentence: str, known: frozenset[str]) -> list[tuple[str, str]]:
    """(phrase, kind) for lowercase phrases: rare-word n-grams, marked or known coinages."""
    found: list[tuple[str, str]] = []
    for match in _MARKED.finditer(sentence):
        words = match.group(1).split()
        if 2 <= len(words) <= 3 and all(_content(w.strip("-")) for w in words):
            found.append((" ".join(words), COMMON))
    for run in _lower_runs(sentence):
        has_rare = any(base_zipf(w) < RARE_ZIPF for w in run)
        if not has_rare and not known:
            continue  # the common case: nothing in this run can be a phrase
        for size in (2, 3, 4):
            for start in range(len(run) - size + 1):
                words = run[start : start + size]
                phrase = tuple(words)
                if any("-" in w for w in words):
                    continue  # a hyphenated compound is a candidate of its own
                if has_rare and _qualifies(phrase) and min(base_zipf(w) for w in words) < RARE_ZIPF:
                    while (
                        len(words) > 2
                        and zipf(words[0]) >= COMMON_ZIPF
                        and min(zipf(w) for w in words[1:]) < RARE_ZIPF
                    ):
                        words = words[1:]
                    if (
                        len(words) >= 2
                        and zipf(words[0]) >= COMMON_ZIPF
                        and zipf(words[1]) < RARE_ZIPF
                    ):
                        continue  # "drinks ashfern": a verb before a lone rare word
                    while len(words) > 2 and zipf(words[-1]) >= _RIGHT_TRIM_ZIPF:
                        words = words[:-1]  # "ashfern tonic burns" → "ashfern tonic"
                    if len(words) == 2 and "-" in words[0] and zipf(words[1]) >= _RIGHT_TRIM_ZIPF:
                        continue  # "trust-ledgers grow": the compound is the term
                    if _qualifies(tuple(words)):
                        found.append((" ".join(words), PHRASE))
                elif known and size <= 3 and all(_content(w) for w in words):
                    key = merge_key(" ".join(words))
                    if key in known:
                        found.append((" ".join(words), COMMON))
    return found


@lru_cache(maxsize=65536)
def base_zipf(word: str) -> float:
    """Frequency of a word or of its plain form ("glows" → "glow", "burned" → "burn")."""
    word = word.lower()
    forms = [word, singular(word)]
    if word.endswith("ed"):
        forms += [word[:-2], word[:-1]]
    if word.endswith("ing"):
        forms += [word[:-3], word[:-3] + "e"]
    if word.endswith("es"):
        forms.append(word[:-2])
    return max(zipf(form) for form in forms if form)


def observe(
    text: str,
    *,
    ignore: Iterable[str] = (),
    known_phrases: frozenset[str] = frozenset(),
    tags: Iterable[tuple[str, str]] = (),
) -> list[Observation]:
    """Every candidate ``text`` offers, with its evidence, first-seen order.

    ``known_phrases``: merge keys of coined common-word phrases seen marked before (in
    quotes, hyphenated): their plain uses count too. ``tags``: (name, category) the DM
    tagged the turn with; a tagged name mentioned in the text counts as introduced.
    """
    skip = set(ignore)
    stats: dict[str, dict] = {}
    text = strip_out_of_character(text)
    for sentence in sentences(text):
        named = _naming(sentence)
        seen_here: set[str] = set()
        hits: list[tuple[str, bool, str]] = []
        for term, at_start in _hits_in_sentence(sentence, skip):
            if term[:1].isupper() or term.isupper():
                single = len(term.split()) == 1 and "_" not in term and not term.isupper()
                camel = single and re.search(r"[a-z][A-Z]", term) is not None
                kind = WORD if single and not camel else NAME
            else:
                kind = COMPOUND  # everyday hyphenations never got here (is_coined_compound)
            hits.append((term, at_start, kind))
        for phrase, kind in _phrases_in_sentence(sentence, known_phrases):
            hits.append((phrase, False, kind))
        for term, at_start, kind in hits:
            key = merge_key(term)
            if not key:
                continue
            entry = stats.get(key)
            if entry is None:
                cue = _cue(term, sentence)
                category = named.get(key) or cue or guess_category(term, sentence)
                entry = stats[key] = {
                    "term": term,
                    "kind": kind,
                    "category": category,
                    "cued": key in named or cue is not None,
                    "sentence": sentence,
                    "mentions": 0,
                    "mid": 0,
                    "named": False,
                }
            elif KIND_ORDER.index(kind) < KIND_ORDER.index(entry["kind"]):
                entry["kind"] = kind
            if not entry["cued"]:
                cue = named.get(key) or _cue(term, sentence)
                if cue:
                    entry["category"], entry["cued"] = cue, True
            if key not in seen_here:
                entry["mentions"] += 1
                seen_here.add(key)
            if not at_start and kind in (WORD, NAME):
                entry["mid"] += 1
            if key in named:
                entry["named"] = True
    for name, category in tags:
        key = merge_key(name)
        if key and key in stats:
            stats[key]["named"] = True
            if not stats[key]["cued"]:
                stats[key]["category"], stats[key]["cued"] = category, True
    return [Observation(key=key, **values) for key, values in stats.items()]


def admits(kind: str, *, mentions: int, turns: int, mid: int, named: bool) -> bool:
    """Has a term with this much evidence earned a World Bible entry?"""
    if named:
        return True
    if kind == COMMON:
        return mentions >= COMMON_USES
    if kind == PHRASE:
        return turns >= 2
    if kind == WORD:
        return mentions >= 2 and mid >= 1
    return mentions >= 2


@dataclass(frozen=True)
class TermStats:
    """Running evidence for one term in one audience (a `VocabStats` row)."""

    key: str
    term: str
    kind: str
    category: str
    cued: bool
    sentence: str
    first_seq: int
    first_round: int
    last_round: int
    mentions: int
    turns: int
    mid: int
    named: bool
    source_ids: tuple[int, ...]

    def admitted(self) -> bool:
        return admits(
            self.kind, mentions=self.mentions, turns=self.turns, mid=self.mid, named=self.named
        )


MAX_SOURCES = 50  # source turn ids a statistics row keeps before the entry exists


def add_observation(
    current: TermStats | None, obs: Observation, *, turn_id: int, seq: int, round_: int
) -> TermStats:
    """``current`` with one more turn's observation folded in (pure; order matters only
    for the first-use fields, which belong to the lowest seq)."""
    if current is None:
        return TermStats(
            key=obs.key,
            term=obs.term,
            kind=obs.kind,
            category=obs.category,
            cued=obs.cued,
            sentence=obs.sentence,
            first_seq=seq,
            first_round=round_,
            last_round=round_,
            mentions=obs.mentions,
            turns=1,
            mid=obs.mid,
            named=obs.named,
            source_ids=(turn_id,),
        )
    kind = min(current.kind, obs.kind, key=KIND_ORDER.index)
    category, cued = current.category, current.cued
    if obs.cued and (not current.cued or seq < current.first_seq):
        category, cued = obs.category, True
    earlier = seq < current.first_seq
    sources = tuple(sorted({*current.source_ids, turn_id}))[:MAX_SOURCES]
    return replace(
        current,
        term=obs.term if earlier else current.term,
        kind=kind,
        category=category,
        cued=cued,
        sentence=obs.sentence if earlier else current.sentence,
        first_seq=min(seq, current.first_seq),
        first_round=min(round_, current.first_round),
        last_round=max(round_, current.last_round),
        mentions=current.mentions + obs.mentions,
        turns=current.turns + 1,
        mid=current.mid + obs.mid,
        named=current.named or obs.named,
        source_ids=sources,
    )


def combine(rows: Iterable[TermStats]) -> TermStats | None:
    """Several audiences' rows for one key, as one audience sees them together."""
    rows = sorted(rows, key=lambda r: r.first_seq)
    if not rows:
        return None
    first = rows[0]
    cued = next((r for r in rows if r.cued), first)
    return replace(
        first,
        kind=min((r.kind for r in rows), key=KIND_ORDER.index),
        category=cued.category,
        cued=cued.cued,
        last_round=max(r.last_round for r in rows),
        mentions=sum(r.mentions for r in rows),
        turns=sum(r.turns for r in rows),
        mid=sum(r.mid for r in rows),
        named=any(r.named for r in rows),
        source_ids=tuple(sorted({i for r in rows for i in r.source_ids}))[:MAX_SOURCES],
    )


__all__ = [
    "COMMON",
    "COMPOUND",
    "NAME",
    "PHRASE",
    "WORD",
    "Observation",
    "TermStats",
    "add_observation",
    "admits",
    "combine",
    "observe",
    "singular",
]
