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
from itertools import pairwise

from context_engine.memory._text import sentences
from context_engine.memory.extraction import _hits_in_sentence, _lower_runs, _qualifies, merge_key
from context_engine.memory.tabletalk import is_meta_talk, is_table_word, strip_out_of_character
from context_engine.memory.vocabulary import (
    COMMON_ZIPF,
    FACTION_WORDS,
    RARE_ZIPF,
    STOPWORDS,
    TITLES,
    guess_category,
    singular,
    zipf,
)

# Kinds, from the most lenient admission rule to the strictest.
NAME, COMPOUND, PHRASE, WORD, COMMON = "name", "compound", "phrase", "word", "common"
UNMARKED = "unmarked"  # two common words, never marked: "brass lung", "trust ledgers"
KIND_ORDER = (NAME, COMPOUND, PHRASE, WORD, COMMON, UNMARKED)
_RIGHT_TRIM_ZIPF = 4.5  # a phrase does not end in a word this common
# A lowercase phrase is a coinage only around a word rarer than this: "arcane arts" (2.99)
# or "ancient runes" are ordinary English, "mithral mine" and "ashfern tonic" are not.
PHRASE_RARE_ZIPF = 2.5
COMMON_USES = 3  # a coined phrase of common words must be used this many times

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


def _cue(term: str, sentence: str) -> str | None:
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


def _named_names(sentence: str) -> list[str]:
    """The names naming patterns introduce in ``sentence``, as written."""
    names = [m.group("name") for m in _PLACE_OF.finditer(sentence)]
    names += [m.group("name") for m in _NAMED.finditer(sentence)]
    names = [re.sub(r"['’]s$", "", name) for name in names]
    # "named Lord and Lady Briarwood": a title alone names no one
    return [name for name in names if name.lower() not in TITLES]


def _naming(sentence: str) -> dict[str, str]:
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


def _phrases_in_sentence(sentence: str, known: frozenset[str]) -> list[tuple[str, str]]:
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
                found.append((f"{first} {second}", UNMARKED))
        has_rare = any(base_zipf(w) < PHRASE_RARE_ZIPF for w in run)
        if not has_rare and not known:
            continue  # the common case: nothing in this run can be a phrase
        for size in (2, 3, 4):
            for start in range(len(run) - size + 1):
                words = run[start : start + size]
                phrase = tuple(words)
                if any("-" in w for w in words):
                    continue  # a hyphenated compound is a candidate of its own
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
                    if key in known:
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
    if is_meta_talk(text):
        return []  # talk about the show or the players: out of character as a whole
    for sentence in sentences(text):
        named = _naming(sentence)
        seen_here: set[str] = set()
        hits: list[tuple[str, bool, str]] = []
        found = _hits_in_sentence(sentence, skip)
        found_keys = {merge_key(term) for term, _ in found}
        for name in _named_names(sentence):
            # A naming pattern introduces even an everyday word: "a cleric named Pike".
            if merge_key(name) not in found_keys and name not in skip:
                found.append((name, False))
                found_keys.add(merge_key(name))
        for term, at_start in found:
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


def admits(kind: str, *, mentions: int, turns: int, mid: int, named: bool, rounds: int = 1) -> bool:
    """Has a term with this much evidence earned a World Bible entry?

    ``rounds``: how many rounds its uses span (first to last). An unmarked pair of common
    words must recur across the story, not within one exchange ("comment cards" said
    three times in a row is table talk; "brass lung" in rounds 1, 10 and 11 is a term).
    """
    if named:
        return True
    if kind == COMMON:
        return mentions >= COMMON_USES
    if kind == UNMARKED:
        return mentions >= COMMON_USES and turns >= COMMON_USES and rounds >= 2
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
            self.kind,
            mentions=self.mentions,
            turns=self.turns,
            mid=self.mid,
            named=self.named,
            rounds=self.last_round - self.first_round + 1,
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
    "UNMARKED",
    "WORD",
    "Observation",
    "TermStats",
    "add_observation",
    "admits",
    "combine",
    "observe",
    "singular",
]
