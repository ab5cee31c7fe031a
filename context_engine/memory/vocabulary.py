"""Word knowledge for term extraction: what is ordinary English, what names a place.

``wordfreq`` (bundled data, works offline) tells ordinary vocabulary from rare or coined
words: a Zipf frequency of 3 is about once per million words. The word lists are small
and hand-made because the categories are only a first guess the DM corrects.
"""

from __future__ import annotations

import re
from functools import lru_cache

from wordfreq import zipf_frequency

RARE_ZIPF = 3.0  # below this a word is rare enough to make a phrase a term
NAME_ZIPF = 3.5  # a lone capitalised word below this is taken as a name
COMMON_ZIPF = 4.0  # an edge word this frequent is trimmed from a recurring phrase
VERY_COMMON_ZIPF = 5.5  # a sentence-initial capitalised word this frequent is ignored


def _words(text: str) -> list[str]:
    return text.split()


# Closed-class words: articles, pronouns, conjunctions, prepositions, auxiliaries.
STOPWORDS = frozenset(
    _words(
        """
        a an the and or but nor so yet for of in on at to from by with without into onto
        upon over under about above below across after before behind beneath beside between
        beyond during inside near off out outside through toward towards until up down via i
        me my we us our you your he him his she her it its they them their this that these
        those who whom whose which what when where why how if then than as is are was were
        be been being am do does did have has had will would shall should can could may
        might must not no yes all any each every some such there here also just only even
        still again once very too now soon later meanwhile suddenly finally perhaps maybe
        while because although though however therefore thus
        """
    )
)

TITLES = frozenset(
    _words(
        """
        lord lady sir dame king queen prince princess duke duchess count countess baron
        baroness captain brother sister father mother master mistress elder saint st doctor
        dr professor general commander archmage magister uncle aunt abbot abbess bishop
        mayor sheriff chancellor emperor empress warden high
        """
    )
)

LOCATION_WORDS = frozenset(
    _words(
        """
        gate keep tower city town village vale valley forest wood woods marsh fen harbor
        harbour port hall temple citadel castle fortress sea river lake mountain mountains
        peak pass road inn tavern library abbey monastery spire bridge isle island coast
        desert cave caverns mine mines market square crossing ford hollow reach wastes
        sanctum archive ruins catacombs crypt tomb palace manor quarter district gardens
        sanctuary shrine observatory docks well
        """
    )
)

FACTION_WORDS = frozenset(
    _words(
        """
        order guild brotherhood sisterhood choir council company circle cult legion house
        clan syndicate league covenant conclave church assembly watch guard army host tribe
        cabal court society collegium college union pact alliance consortium empire
        dominion assembly senate regime republic
        """
    )
)

ARTIFACT_WORDS = frozenset(
    _words(
        """
        chisel glass blade sword knife dagger axe spear bow staff wand stone gem ring amulet
        crown orb tonic potion elixir key tome book scroll map lantern lamp mirror shield
        helm cloak mask coin idol relic compass chalice cup flask vial box engine clock bell
        seal sigil rune charm talisman cube shard hammer lens needle codex brew salve dust
        """
    )
)

# Hyphenated compounds built on these are ordinary English, not coinages.
ORDINARY_COMPOUND_HEADS = frozenset(
    _words(
        """
        well self half long short ever all so non semi ex ill far near high low full first
        second third one two three four five six seven eight nine ten twenty thirty forty
        fifty hundred north south east west re co pre post anti multi over under out up down
        off on in mid cross quasi pseudo sub super ultra un old new good bad big little open
        close hand left right fast slow hard soft part thank double triple make follow check
        sign log set back face eye mind brand last
        """
    )
)
ORDINARY_COMPOUND_TAILS = frozenset(
    _words(
        """
        like based free wide long sized shaped coloured colored looking faced eyed haired
        handed hearted minded made born proof ready worthy time up off out in on down over
        away back by red blue green black white grey gray gold golden silver yellow brown
        pale dark cold hot deep high tall thick thin old new year years day days way ways
        one class level bound side known wise length you check up shot play minute
        """
    )
)

_DEPLURAL = (("ies", "y"), ("sses", "ss"), ("shes", "sh"), ("ches", "ch"), ("xes", "x"))


@lru_cache(maxsize=8192)
def zipf(word: str) -> float:
    """Zipf frequency of ``word`` in English (0 for unknown words)."""
    return zipf_frequency(word.lower(), "en")


def singular(word: str) -> str:
    """A cautious English singular, enough to merge 'Geometers' with 'Geometer'."""
    if len(word) <= 3:
        return word
    for plural, single in _DEPLURAL:
        if word.endswith(plural) and len(word) > len(plural) + 1:
            return word[: -len(plural)] + single
    if word.endswith(("ss", "us", "is")) or not word.endswith("s"):
        return word
    return word[:-1]


def is_coined_compound(token: str) -> bool:
    """A lowercase hyphenated compound that is not ordinary English (``void-chisel``).

    wordfreq scores a compound by its rarest part, so ``sky-iron`` looks ordinary;
    instead a compound is ordinary when it is built on a productive head (``well-``,
    ``half-``, numbers, directions), ends in an ordinary tail (``-like``, colours,
    ``-eyed``), or ends in an -ly/-ed participle of a common word.
    """
    parts = token.split("-")
    if len(parts) < 2 or any(not part.isalpha() or len(part) < 2 for part in parts):
        return False
    if len(parts) > 2 and any(part in STOPWORDS for part in parts):
        return False  # jack-in-the-box, mother-in-law: idioms, not coinages
    if len(parts) > 2 and all(zipf(part) >= 4.0 for part in parts):
        return False  # happy-go-lucky, run-of-the-mill: idioms of everyday words
    head, tail = parts[0], parts[-1]
    if zipf("".join(parts)) >= 1.0:
        return False  # written closed too ("thankyou", "doublecheck"): everyday English
    if head in ORDINARY_COMPOUND_HEADS or tail in ORDINARY_COMPOUND_TAILS:
        return False
    if tail.endswith(("ly", "ed", "en")) and zipf(tail) >= RARE_ZIPF:
        return False
    return not all(zipf(part) >= VERY_COMMON_ZIPF for part in parts)


def _location_context(term: str, sentence: str) -> bool:
    pattern = (
        r"\b(?:in|at|into|toward|towards|through|near|reached|reach|entered|enter)"
        r"\s+(?:the\s+)?" + re.escape(term) + r"\b"
    )
    return re.search(pattern, sentence, re.IGNORECASE) is not None


def guess_category(term: str, sentence: str = "") -> str:
    """npc | location | artifact | faction | term: a first guess the DM may correct."""
    words = re.split(r"[\s\-_]+", term.strip())
    first, last = words[0].lower(), singular(words[-1].lower())
    capitalised = term[:1].isupper()
    if capitalised and first in TITLES and len(words) > 1:
        return "npc"
    if last in LOCATION_WORDS or words[-1].lower() in LOCATION_WORDS:
        return "location"
    if capitalised and (last in FACTION_WORDS or (first in FACTION_WORDS and len(words) > 1)):
        return "faction"
    if last in ARTIFACT_WORDS:
        return "artifact"
    plural = len(words) == 1 and words[0].endswith("s") and singular(words[0]) != words[0]
    if capitalised and not term.isupper() and plural:
        return "faction"  # "the Geometers", "near the Carvers": a plural name is a group
    if capitalised and sentence and _location_context(term, sentence):
        return "location"
    if capitalised and not term.isupper() and len(words) == 1:
        if re.search(r"[a-z][A-Z]", words[0]):
            return "term"  # CamelCase
        return "npc"
    if capitalised and not term.isupper():
        return "npc"
    return "term"
