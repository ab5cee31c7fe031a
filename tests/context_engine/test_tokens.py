"""A long text's token count is the sum of its segments' counts, exactly.

`tokens.count` counts a rendered section in segments (`tokens.segments`) so that the
lines a pack shares with the previous one are not encoded again. The sum must be the
number tiktoken gives for the whole text, whatever the text: packs are held to their
budget by these counts. Hypothesis throws texts at it made of what moves cl100k_base's
piece boundaries — letters next to spaces, runs of spaces and newlines, punctuation,
digits, apostrophes (contractions), tabs, carriage returns, non-ASCII letters, emoji.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine import tokens

ALPHABET = [
    *"abcXYZ  \n\n\t\r.,!?'’\"-()…0123456789éßΩ中😀\u00a0",
    "'s",
    "'ll",
    " the",
    "Th",
    "\n\n",
]
texts = st.lists(st.sampled_from(ALPHABET), max_size=300).map("".join)
encode = tokens.raw_counter()


@settings(max_examples=400)
@given(texts)
def test_segments_rebuild_the_text_and_their_counts_add_up_to_its_count(text):
    parts = list(tokens.segments(text))
    assert "".join(parts) == text
    assert all(parts)
    assert sum(encode(part) for part in parts) == encode(text)


@settings(max_examples=60)
@given(st.lists(texts, min_size=30, max_size=60))
def test_a_long_text_counts_the_same_as_one_encoding_of_it(lines):
    text = "\n".join(lines) + "\n"
    text *= tokens.CACHED_TEXT_CHARS // len(text) + 2  # long enough to be counted in segments
    assert len(text) > tokens.CACHED_TEXT_CHARS
    assert tokens.count(text) == encode(text)


def test_a_rendered_section_is_cut_into_about_a_segment_a_line():
    lines = [f"[R{i}] Thorin (action): I light lantern {i} by the gate." for i in range(200)]
    text = "## Recent events\n" + "\n".join(lines)
    parts = list(tokens.segments(text))
    assert len(parts) == 1 + len(lines) + 1  # the header's, each line's, the last line's end
    assert tokens.count(text) == encode(text)


def test_a_line_longer_than_a_segment_is_cut_inside_it():
    text = "word " * 2000
    parts = list(tokens.segments(text))
    assert len(parts) > 1
    assert max(map(len, parts)) <= tokens.SEGMENT_CHARS + 1
    assert sum(map(encode, parts)) == encode(text)


def test_a_long_text_without_a_cut_is_counted_whole_and_not_kept():
    text = "1234567890, " * 1000  # no letter-space-letter anywhere: one segment
    assert list(tokens.segments(text)) == [text]
    before = tokens._count_cached.cache_info().currsize
    assert tokens._count_long(text) == encode(text)
    assert tokens._count_cached.cache_info().currsize == before
