"""Category cues are matched beside each occurrence of a term (patterns compiled once).

The reference below is the readable form of each cue: one regular expression per term,
``before + term + \\b`` or ``term + after``. The fast form must give the same category for
any sentence, which Hypothesis checks over sentences built from the cue words.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.memory import cues
from context_engine.memory.cues import cue


def reference_cue(term: str, sentence: str) -> str | None:
    t = re.escape(term)
    words = term.split()
    if term[:1].isupper() and words[0].lower() in cues.TITLES and len(words) > 1:
        return "npc"
    if term[:1].isupper() and words[0].lower() in cues.FACTION_WORDS and len(words) > 1:
        return "faction"
    if re.search(
        r"\b(?:speak|speaks|spoke|speaking|fluent in|written in)\s+" + t + r"\b", sentence
    ):
        return "term"
    if len(words) == 1 and term[:1].isupper() and cues.singular(term) != term:
        if re.search(r"\b" + t + r"\s+(?:are|were)\s+(?:the|a|an)\b", sentence):
            return "faction"
        return None
    if re.search(
        r"\b(?:in|at|into|inside|within|near|through|across|beyond|reach\w*|enter\w*)\s+"
        r"(?:the\s+)?" + t + r"\b",
        sentence,
    ):
        return "location"
    motion = r"\b" + cues._MOTION + r"\s+(?:\w+\s+)?(?:to|from|toward|towards)\s+(?:the\s+)?"
    if re.search(motion + t + r"\b", sentence):
        return "location"
    if re.search(r"\b" + cues._FROM + r"\s+(?:\w+\s+)?from\s+(?:the\s+)?" + t + r"\b", sentence):
        return "location"
    if re.search(
        r"\b(?:heart|edge|outskirts|centre|center|streets|gates|walls|ruler|mayor)\s+of\s+"
        r"(?:the\s+)?" + t + r"\b",
        sentence,
    ) or re.search(r"\bwhat(?:'s|’s| is)\s+called\s+(?:the\s+)?" + t + r"\b", sentence, re.I):
        return "location"
    if re.search(
        cues._SPELL + r"\s+(?:a\s+|an\s+|the\s+|of\s+)?" + t + r"\b", sentence, re.I
    ) or re.search(t + r"\s+(?:spell|cantrip|ritual|incantation)\b", sentence, re.I):
        return "term"
    item = cues._ITEM + r"\s+(?:a\s+|an\s+|the\s+|his\s+|her\s+|their\s+|my\s+)?"
    if re.search(item + t + r"\b", sentence, re.I):
        return "artifact"
    if re.search(t + r"\s+(?:check|save|saving throw|roll|modifier|bonus)\b", sentence, re.I):
        return "term"
    return None


TERMS = ["Draconia", "Stone's Pillow", "Carvers", "Dwarvish", "Fireball", "Void Blade", "Lady Kima"]
PIECES = [
    "speaks",
    "fluent in",
    "are the",
    "were a",
    "in",
    "at the",
    "reached",
    "entering",
    "walk over to",
    "went back from",
    "came from the",
    "heart of",
    "gates of the",
    "what's called the",
    "cast a",
    "spell",
    "cantrip",
    "drew the",
    "picked up his",
    "check",
    "saving throw",
    "roll",
    "the",
    "and",
    "Sometimes",
    "we",
    ",",
    ".",
    "'",
    "-",
    "x",
]


@settings(max_examples=400, deadline=None)
@given(
    term=st.sampled_from(TERMS),
    parts=st.lists(
        st.tuples(
            st.sampled_from(PIECES + TERMS + [t.lower() for t in TERMS]),
            st.sampled_from([" ", " ", "  ", ""]),
        ),
        max_size=9,
    ),
)
def test_the_fast_cues_give_the_reference_category_for_any_sentence(term, parts):
    sentence = "".join(piece + gap for piece, gap in parts)
    assert cue(term, sentence) == reference_cue(term, sentence)


def test_each_cue_still_names_its_category():
    assert cue("Dwarvish", "Pike speaks Dwarvish to the guard.") == "term"
    assert cue("Carvers", "The Carvers are the ones we want.") == "faction"
    assert cue("Draconia", "They reached Draconia at dusk.") == "location"
    assert cue("Draconia", "in the heart of Draconia") == "location"
    assert cue("Fireball", "I cast a Fireball at them.") == "term"
    assert cue("Void Blade", "She drew the Void Blade.") == "artifact"
    assert cue("Draconia", "Draconiana is a word.") is None
    assert cue("Draconia", "We reached Draconiana.") is None  # not the whole word
