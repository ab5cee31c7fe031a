"""Lowercase coinages: rare-word phrases ("ashfern tonic"), pairs of common words
("brass lung"), phrases marked in quotes, and lone coined words ("thalplix").

A pair of everyday words is said in any talk ("lentil stew", "pure habit"), so it is
kind UNMARKED, never lore by itself, until something marks it as a name (issue 22):
quotes, a naming cue ("what the divers call a brass lung", "known as"), "the X of"
a capitalised name, or use as the subject of a verb of its own ("the brass lung
wheezes"); a marked use is kind COMMON and from then on its plain uses count too.

Used by `context_engine.memory.observe`, which decides from the kinds returned here how
much evidence each needs (`observe.admits`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import pairwise

from context_engine.memory.extraction import _lower_runs, _qualifies, merge_key
from context_engine.memory.kinds import COMMON, PHRASE, UNMARKED
from context_engine.memory.tabletalk import is_table_word
from context_engine.memory.vocabulary import COMMON_ZIPF, RARE_ZIPF, STOPWORDS, singular, zipf

_RIGHT_TRIM_ZIPF = 4.5  # a phrase does not end in a word this common
# A lowercase phrase is a coinage only around a word rarer than this: "arcane arts" (2.99)
# or "ancient runes" are ordinary English, "mithral mine" and "ashfern tonic" are not.
PHRASE_RARE_ZIPF = 2.5
_MARKED = re.compile(r"[\"“‘'`*_]([a-z][a-z\- ]{2,60}?)[\"”’'`*_]")


def _split(text: str) -> frozenset[str]:
    return frozenset(text.split())


@lru_cache(maxsize=65536)
def _content(word: str) -> bool:
    return (
        word not in STOPWORDS
        and len(word) >= 3
        and not word.endswith("ly")
        and not is_table_word(word)
    )


def phrases_in_sentence(sentence: str, known: frozenset[str]) -> list[tuple[str, str]]:
    """(phrase, kind) for lowercase phrases: rare-word n-grams, marked or known coinages."""
    found: list[tuple[str, str]] = []
    for match in _MARKED.finditer(sentence):
        words = match.group(1).split()
        if 2 <= len(words) <= 3 and all(_content(w.strip("-")) for w in words):
            found.append((" ".join(words), COMMON))
    for run in _lower_runs(sentence):
        for first, second in pairwise(run):
            second = re.sub(r"['’]s$", "", second)
            if _coinable_pair(first, second):
                pair = f"{first} {second}"
                found.append((pair, COMMON if _marked(pair, sentence) else UNMARKED))
        has_rare = any(base_zipf(w) < PHRASE_RARE_ZIPF for w in run)
        if not has_rare and not known:
            continue  # the common case: nothing in this run can be a phrase
        for size in (2, 3, 4):
            for start in range(len(run) - size + 1):
                words = run[start : start + size]
                phrase = tuple(words)
                if any("-" in w for w in words):
                    continue  # a hyphenated compound is a candidate of its own
                if set(words[1:-1]) & _ARTICLES:
                    continue  # "rubs the cowrie": an article starts a new noun phrase
                if (
                    has_rare
                    and _qualifies(phrase)
                    and min(base_zipf(w) for w in words) < PHRASE_RARE_ZIPF
                ):
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
                    rare = [w for w in words if base_zipf(w) < PHRASE_RARE_ZIPF]
                    if all(w in MODIFIERS or w.endswith(_ADJECTIVE) for w in rare):
                        continue  # "dwarven brunch", "disdainful looks": a rare adjective
                    if _qualifies(tuple(words)) and not set(words) & _PRONOUNS:
                        found.append((" ".join(words), PHRASE))  # not "sigil under my cloak"
                elif known and size <= 3 and all(_content(w) for w in words):
                    key = merge_key(" ".join(words))
                    # A coinable pair's mark lives in its own audience's statistics
                    # (kind COMMON there); seen elsewhere it must not upgrade this use.
                    if key in known and not (size == 2 and _coinable_pair(*words)):
                        found.append((" ".join(words), COMMON))
    # A coined word inside a two-word term is that term ("ashfern tonic"); inside a
    # looser phrase ("remembers the thalplix") it is a candidate of its own.
    inside = {word for phrase, _ in found if len(phrase.split()) == 2 for word in phrase.split()}
    for match in _LONE_LOWER.finditer(sentence):
        word = match.group()
        if word not in inside and _coined_word(word):
            found.append((word, PHRASE))  # "the thalplix": a coined word, needs two turns
    return found


# Unmarked coined phrases (issue 10, ask 4). Two adjacent lowercase content words may be
# a coinage ("brass lung", "trust ledger"), used three times in three turns; ordinary
# English pairs are kept out by the parts: an everyday modifier or quantity first ("good
# luck", "next week", "ten minutes"), a generic or measuring head ("a little bit", "gold
# pieces", "persuasion check"), or a very frequent word on either side ("make sure").
MODIFIERS = _split(
    """
    good bad great big small little large huge tiny long short tall high low old new young
    next last first second third final other same own whole full empty real true false right
    left nice fine cool sure dark light black white red blue green grey gray brown golden
    silver hot cold warm wet dry hard soft heavy quick fast slow early late main few many
    much more most less least several enough every each certain single double one two three
    four five six seven eight nine ten twenty hundred thousand half quarter poor rich free
    open closed best better worse worst strange weird pretty beautiful huge entire only
    total proper actual different common general local public private arcane magic magical
    divine holy unholy sacred cursed evil demonic dwarven elven elvish human undead mystic
    eldritch infernal celestial royal noble enchanted residential special major minor
    ancient nearby outer inner upper lower central front back top bottom side middle distant
    previous current recent future past whole lovely wonderful amazing awesome fantastic
    terrible horrible ugly fancy famous loose broken cracked morning afternoon evening night
    midnight dawn dusk noon summer winter autumn today
    """
)
# Pronouns and adverbs that STOPWORDS leave out but that never start or end a coinage.
_FUNCTION = _split(
    """
    anyone anybody anything everyone everybody everything someone somebody something nobody
    nothing none else whether along around away across ever never always often already
    together really quite rather somewhere anywhere everywhere nowhere
    """
)
GENERIC_HEADS = _split(
    """
    time times way ways thing things stuff bit lot lots kind sort type part parts place
    places people person guy guys one ones day days week weeks night nights morning evening
    minute minutes hour hours year years moment moments second seconds feet foot mile miles
    inch inches pound pounds piece pieces gold silver copper coin coins check checks roll
    rolls save saves throw throws modifier bonus slot slots point points dice die level
    levels round rounds turn turns action actions rest damage side sides end area areas room
    rooms idea ideas question questions answer answers reason problem form forms shape shapes
    """
)
_VERY_COMMON_PART = 5.5
_ADJECTIVE = ("ial", "ical", "ous", "ive", "ful", "less", "able", "ible", "ary", "ing", "ish")


_PRONOUNS = _split(
    """
    i me my mine you your yours he him his she her hers it its we us our
    """
)
_PRONOUNS |= _split("they them their theirs myself yourself himself herself ourselves")
_ARTICLES = frozenset({"the", "a", "an"})
_LONE_LOWER = re.compile(r"(?<![\w'’-])[a-z]{5,}(?![\w'’-])")


@lru_cache(maxsize=65536)
def _coined_word(word: str) -> bool:
    """A lowercase word English does not have ("thalplix", "mithral"), nor derives from a
    word it has ("barmaiders" from "barmaid")."""
    if base_zipf(word) > 0 or is_table_word(word):
        return False
    for suffix in ("ers", "er", "ing", "ed", "s", "ish", "y"):
        if word.endswith(suffix) and zipf(word[: -len(suffix)]) >= 2.0:
            return False
    return True


def _verb_s(word: str) -> bool:
    """A third-person verb rather than a plural noun: its -ed or -ing form is about"""
    if not word.endswith("s") or word.endswith("ss") or len(word) < 4:
        return False
    stem = word[:-2] if word.endswith(("shes", "ches", "xes")) else word[:-1]
    forms = [stem + "ed", stem + "ing"]
    if stem.endswith("e"):
        forms = [stem + "d", stem[:-1] + "ing"]
    # as common as the -s form itself: "barks" (barking), "shows"; not "hearts", "lungs"
    return max(zipf(forms[0]), zipf(forms[1])) >= zipf(word) - 0.4


# Marks that make a pair of everyday words a name. A plain "call it pure habit" is an
# idiom, not a naming: a bare "call" needs an article before the pair.
_NAMING_BEFORE = re.compile(
    r"\b(?:(?:called|named|known\s+as|dubbed|so-called)\s+(?:the\s+|an?\s+)?|"
    r"calls?\s+(?:it\s+|them\s+)?(?:the|an?)\s+)\Z",
    re.I,
)
_THE_BEFORE = re.compile(r"\bthe\s+\Z", re.I)
_OF_NAME_AFTER = re.compile(r"\s+of\s+(?:the\s+)?[A-Z]")
_SUBJECT_BEFORE = re.compile(
    r"(?:\A|[,;:—–]\s*|\b(?:and|but|then|while|as|when|until|where)\s+)(?:the|an?)\s+\Z", re.I
)
_VERB_AFTER = re.compile(r"\s+([a-z]+)\b")
# Verbs that describe a thing rather than have it act: "the lentil stew smells of cumin".
_LINKING = _split(
    """
    is was has does seems looks smells tastes sounds feels gets becomes remains stays
    appears needs costs means lies sits stands
    """
)


def _acts(verb: str) -> bool:
    """A finite verb of the subject's own: "wheezes", "wheezed", not "is" or "smells"."""
    if verb.endswith("ed"):
        present = verb[:-2] + "s" if zipf(verb[:-2]) > 0 else verb[:-1] + "s"
        return present not in _LINKING and zipf(verb) > 0
    return verb not in _LINKING and _verb_s(verb)


def _marked(pair: str, sentence: str) -> bool:
    """Is this use of ``pair`` marked as a name (see the module doc)?"""
    for match in re.finditer(r"(?<![\w'’-])" + re.escape(pair) + r"(?![\w-])", sentence):
        start, end = match.span()
        if _NAMING_BEFORE.search(sentence, 0, start):
            return True
        if _THE_BEFORE.search(sentence, 0, start) and _OF_NAME_AFTER.match(sentence, end):
            return True
        verb = _VERB_AFTER.match(sentence, end)
        if verb and _SUBJECT_BEFORE.search(sentence, 0, start) and _acts(verb.group(1)):
            return True
    return False


@lru_cache(maxsize=65536)
def _coinable_pair(first: str, second: str) -> bool:
    """Can ``first second`` be an unmarked coined phrase (see MODIFIERS above)?"""
    if "-" in first or "-" in second or first == second or re.search(r"['’]", first):
        return False  # compounds are their own candidates; "lung's valve" is a possessive
    if first.endswith("s") and singular(first) != first and zipf(singular(first)) >= zipf(first):
        return False  # "drinks dragon", "pulls chains": a verb or plural before a noun
    if not (_content(first) and _content(second)) or {first, second} & _FUNCTION:
        return False
    if second.endswith(("ing", "ed")) or (
        first.endswith(("ing", "ed", "en")) and zipf(first) >= RARE_ZIPF
    ):
        return False  # "driver humming", "marching song", "broken bridge": verb forms
    if _verb_s(second):
        return False  # "dog barks", "wind pulls": a subject and its verb
    if first in MODIFIERS or second in MODIFIERS or singular(second) in GENERIC_HEADS:
        return False
    if first.endswith(_ADJECTIVE):
        return False  # an adjective first: "official business", "dangerous place"
    if second in GENERIC_HEADS or (first.endswith(("ing", "ed")) and zipf(first) >= COMMON_ZIPF):
        return False  # "walking stick" is fine as a PHRASE only when rare; "looking guy" no
    lowest = min(base_zipf(first), base_zipf(second))
    if lowest < PHRASE_RARE_ZIPF:
        return False  # a rare word: the PHRASE rule's business ("ashfern tonic")
    return max(zipf(first), zipf(second)) < _VERY_COMMON_PART


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
