"""Category cues and naming patterns: what a sentence's wording says a term is.

"Pike speaks Dwarvish" (a language), "they rode to Westruun" (a place), "a cleric named
Pike" (a person, introduced), "the city of Lowmere" (a place, introduced). Used by
`context_engine.memory.observe`; each cue is matched beside an occurrence of the term.
"""

from __future__ import annotations

import re
from functools import lru_cache

from context_engine.memory.extraction import merge_key
from context_engine.memory.vocabulary import FACTION_WORDS, LOCATION_WORDS, TITLES, singular

_CAP_NAME = r"[A-Z][\w'’-]*(?:\s+(?:of\s+(?:the\s+)?|the\s+)?[A-Z][\w'’-]*)*"
_NAMED = re.compile(
    r"\b(?:(?P<noun>[a-z]+)\s+)?(?:named|called|known\s+as|dubbed|titled|name\s+is)\s+"
    r"(?:the\s+)?(?P<name>" + _CAP_NAME + ")"
)
_PLACE_OF = re.compile(
    r"\b(?:[Tt]he|[Aa]n?)\s+(?:[a-z][\w'’-]*\s+)?"  # "the ancient castle of", "the far-off city of"
    r"(?P<noun>city|town|village|hamlet|port|capital|kingdom|realm|land|lands|"
    r"isle|island|province|region|duchy|county|barony|valley|forest|fortress|citadel|castle|"
    r"manor|empire|dominion|republic|tribe|clan|house|order|guild)\s+of\s+(?:the\s+)?"
    r"(?P<name>" + _CAP_NAME + ")"
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
    [
        "empire",
        "dominion",
        "republic",
        "guild",
        "order",
        "faction",
        "cult",
        "clan",
        "tribe",
        "house",
    ]
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
# Travel words: "to X" after them names a place. Plain "go/walk/come over to X" does not
# ("walk over to Grog"), so those are left out.
_MOTION = (
    r"(?:travel\w*|ride|rode|riding|sail\w*|head\w*|return\w*|march\w*|flee\w*|fled|"
    r"journey\w*|arriv\w*|bound|road|way|hail\w*|escap\w*)"
)
# Any coming or going "from X" names where someone comes from: "They came from Gloomfen".
_FROM = r"(?:go|goes|going|went|gone|come|comes|came|coming|walk\w*|run|ran|fly|flew|back)"
_SPELL = r"(?:cast|casts|casting|spell|spells|incant\w*|invok\w*|summon\w*)"
_ITEM = (
    r"(?:wield\w*|draw\w*|drew|carr\w*|hold\w*|held|pocket\w*|grab\w*|equip\w*|pick\w* up|"
    r"picked up|found|finds|buy\w*|bought|sell\w*|sold|give\w*|gave|use\w*|drink\w*|drank)"
)


# Cues around a term, compiled once. Each is matched next to an occurrence of the term
# (`_cued`): built into one pattern per term instead, the long verb alternations would be
# compiled again for every new term, which was most of hydration's time.
_BEFORE_LANGUAGE = re.compile(r"\b(?:speak|speaks|spoke|speaking|fluent in|written in)\s+\Z")
_AFTER_GROUP = re.compile(r"\s+(?:are|were)\s+(?:the|a|an)\b")
_BEFORE_IN = re.compile(
    r"\b(?:in|at|into|inside|within|near|through|across|beyond|reach\w*|enter\w*)\s+"
    r"(?:the\s+)?\Z"
)
_BEFORE_MOTION = re.compile(
    r"\b" + _MOTION + r"\s+(?:\w+\s+)?(?:to|from|toward|towards)\s+(?:the\s+)?\Z"
)
_BEFORE_FROM = re.compile(r"\b" + _FROM + r"\s+(?:\w+\s+)?from\s+(?:the\s+)?\Z")
_BEFORE_OF = re.compile(
    r"\b(?:heart|edge|outskirts|centre|center|streets|gates|walls|ruler|mayor)\s+of\s+"
    r"(?:the\s+)?\Z"
)
_BEFORE_CALLED = re.compile(r"\bwhat(?:'s|’s| is)\s+called\s+(?:the\s+)?\Z", re.I)
_BEFORE_SPELL = re.compile(_SPELL + r"\s+(?:a\s+|an\s+|the\s+|of\s+)?\Z", re.I)
_AFTER_SPELL = re.compile(r"\s+(?:spell|cantrip|ritual|incantation)\b", re.I)
_BEFORE_ITEM = re.compile(_ITEM + r"\s+(?:a\s+|an\s+|the\s+|his\s+|her\s+|their\s+|my\s+)?\Z", re.I)
_AFTER_CHECK = re.compile(r"\s+(?:check|save|saving throw|roll|modifier|bonus)\b", re.I)


_BEFORE_NAME = re.compile(
    r"\b(?:the|in|at|into|onto|to|from|toward|towards|inside|within|near|through|across|"
    r"beyond|past|passes|passed)\s+(?:the\s+)?\Z"
)
_CAMEL = re.compile(r"[a-z][A-Z]")


@lru_cache(maxsize=4096)
def _term_pattern(term: str, ignore_case: bool) -> re.Pattern:
    return re.compile(re.escape(term), re.I if ignore_case else 0)


def _word_boundary(text: str, index: int) -> bool:
    """``\\b`` at ``index``: a word character on exactly one side."""
    before = index > 0 and (text[index - 1].isalnum() or text[index - 1] == "_")
    after = index < len(text) and (text[index].isalnum() or text[index] == "_")
    return before != after


def _cued(
    term: str,
    sentence: str,
    *,
    before: re.Pattern | None = None,
    after: re.Pattern | None = None,
    ignore_case: bool = False,
    word_end: bool = True,
) -> bool:
    """Whether ``before`` ends right where the term starts (``before`` is anchored with
    ``\\Z``), or ``after`` starts right where it ends, somewhere in ``sentence``: the same
    as one pattern ``before + term + \\b`` (or ``term + after``) searched over it."""
    for match in _term_pattern(term, ignore_case).finditer(sentence):
        start, end = match.span()
        if word_end and not _word_boundary(sentence, end):
            continue
        if before is not None and before.search(sentence, 0, start):
            return True
        if after is not None and after.match(sentence, end):
            return True
    return False


def cue(term: str, sentence: str) -> str | None:
    """The category a sentence's wording gives ``term``, or None when it says nothing."""
    words = term.split()
    if term[:1].isupper() and words[0].lower() in TITLES and len(words) > 1:
        return "npc"
    if term[:1].isupper() and words[0].lower() in FACTION_WORDS and len(words) > 1:
        return "faction"  # "House Thunderbrand", "Order of the Ember"
    if term.lower() not in sentence.lower():
        return None  # every cue below names the term
    if _cued(term, sentence, before=_BEFORE_LANGUAGE):
        return "term"  # a language: "Pike speaks Dwarvish"
    if len(words) == 1 and term[:1].isupper() and singular(term) != term:
        # "the Carvers", "the Geometers": a plural name is a group wherever it stands
        group = any(
            _word_boundary(sentence, m.start()) and _AFTER_GROUP.match(sentence, m.end())
            for m in _term_pattern(term, False).finditer(sentence)
        )
        return "faction" if group else None
    if _cued(term, sentence, before=_BEFORE_IN) or _cued(term, sentence, before=_BEFORE_MOTION):
        return "location"
    if _cued(term, sentence, before=_BEFORE_FROM):
        return "location"
    if _cued(term, sentence, before=_BEFORE_OF) or _cued(
        term, sentence, before=_BEFORE_CALLED, ignore_case=True
    ):
        return "location"  # "in the heart of Draconia", "find what's called the Stone's Pillow"
    if _cued(term, sentence, before=_BEFORE_SPELL, ignore_case=True) or _cued(
        term, sentence, after=_AFTER_SPELL, ignore_case=True, word_end=False
    ):
        return "term"
    if _cued(term, sentence, before=_BEFORE_ITEM, ignore_case=True):
        return "artifact"
    if _cued(term, sentence, after=_AFTER_CHECK, ignore_case=True, word_end=False):
        return "term"
    return None


def names_itself(term: str, sentence: str, at_start: bool, ignore: set[str]) -> bool:
    """Does the narration's wording make ``term`` a proper name on its first mention?

    Its form: a title before a name ("Lady Corisande", "Brother Anselm"), a place or
    group head ("the Thornwick Gate", "the Ashen Order", "House Vell"), CamelCase, or a
    run of capitalised words mid-sentence ("asks Harl Dunmore"). Its place: "the" or a
    place word right before it mid-sentence ("the Greycloaks pass", "in Vell Amar").
    A lone word at a sentence start, shouting, a participant's own name with a title
    ("Captain Thorin") never do.
    """
    words = term.split()
    if not term[:1].isupper() or term.isupper() or any(word in ignore for word in words):
        return False
    head = singular(words[-1].lower())
    if len(words) > 1 and (
        words[0].lower() in TITLES
        or head in LOCATION_WORDS
        or head in FACTION_WORDS
        or words[0].lower() in FACTION_WORDS
    ):
        return True
    if at_start:
        return False
    if len(words) > 1 or _CAMEL.search(term):
        return True
    return _cued(term, sentence, before=_BEFORE_NAME)


def named_names(sentence: str) -> list[str]:
    """The names naming patterns introduce in ``sentence``, as written."""
    names = [m.group("name") for m in _PLACE_OF.finditer(sentence)]
    names += [m.group("name") for m in _NAMED.finditer(sentence)]
    names = [re.sub(r"['’]s$", "", name) for name in names]
    # "named Lord and Lady Briarwood": a title alone names no one
    return [name for name in names if name.lower() not in TITLES]


def naming(sentence: str) -> dict[str, str]:
    """merge key → category for names a naming pattern introduces in ``sentence``."""
    named: dict[str, str] = {}
    for match in _PLACE_OF.finditer(sentence):
        noun = match.group("noun").lower()
        category = "faction" if noun in FACTION_NOUNS else "location"
        named.setdefault(merge_key(match.group("name")), category)
    for match in _NAMED.finditer(sentence):
        if match.group("name").lower() in TITLES:
            continue
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
