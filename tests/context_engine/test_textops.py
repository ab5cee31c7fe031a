"""`textops.mentions`: the whole-term match that decides which lore the frozen section
defines in full."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.textops import mentions


def test_a_term_is_found_after_an_occurrence_inside_a_longer_word():
    assert mentions("oil", "we boil the brinewick oil")
    assert mentions("void-chisel", "a void-chiseled wall, then the void-chisel itself")


def test_a_term_right_after_a_word_character_is_no_mention():
    assert not mentions("oil", "boil")
    assert not mentions("chisel", "void-chisel")
    assert mentions("oil", "oil")


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet="oil- b\nx", min_size=0, max_size=6),
    st.text(alphabet="oil- b\nx_", max_size=40),
)
def test_mentions_is_the_whole_term_regex_over_the_whole_text(term, text):
    """Searching from the term's first occurrence finds exactly what a search of the whole
    text finds (the lookbehind still sees the character before it)."""
    stripped = term.strip()
    pattern = r"(?<![\w-])" + re.escape(stripped.lower()) + r"(?![\w-])"
    expected = bool(stripped) and re.search(pattern, text.lower()) is not None
    assert mentions(term, text.lower()) == expected
