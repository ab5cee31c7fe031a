"""A long text's token count is the sum of its segments' counts, exactly.

`tokens.count` counts a rendered section in segments (`tokens.segments`) so that the
lines a pack shares with the previous one are not encoded again. The sum must be the
number tiktoken gives for the whole text, whatever the text: packs are held to their
budget by these counts. Hypothesis throws texts at it made of what moves cl100k_base's
piece boundaries — letters next to spaces, runs of spaces and newlines, punctuation,
digits, apostrophes (contractions), tabs, carriage returns, non-ASCII letters, combining
marks, emoji. `tokens.count_joined` counts a section line by line, and must agree too.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine import tokens

ALPHABET = [
    *"abcXYZ  \n\n\t\r.,!?'’\"-()…0123456789éßΩ中😀\u00a0\u0301",
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


@settings(max_examples=400)
@given(st.lists(texts, max_size=12))
def test_a_text_is_its_lines_and_counts_as_their_counts_with_newlines(lines):
    text = "\n".join(lines)
    parts = tokens.lines_of(text)
    assert "\n".join(parts) == text
    counts = [encode(part + "\n") for part in parts[:-1]] + [encode(parts[-1])]
    assert sum(counts) == encode(text)


@settings(max_examples=100)
@given(st.lists(texts, min_size=2, max_size=8), st.sampled_from(ALPHABET))
def test_lines_after_whitespace_or_punctuation_count_exactly(lines, edge):
    # The joins the sum relies on, forced: every line ends with ``edge``.
    text = "\n".join(line + edge for line in lines)
    text *= tokens.CACHED_TEXT_CHARS // max(len(text), 1) + 2  # counted a line at a time
    assert tokens.count(text) == encode(text)


def test_a_line_led_by_whitespace_or_empty_joins_the_line_before():
    assert tokens.lines_of("a\n b\n\nc\n") == ["a\n b\n", "c\n"]


@pytest.mark.parametrize(
    "count, template, past_cache",
    [
        # Past the whole-text cache: counted in lines, as ever.
        (80, "[R{i}] Thorin (action): I light lantern {i} by the gate, slowly.", True),
        # A strained recent window: under the whole-text cache, and new in every pack as
        # the window moves on by a turn.
        (6, "[R{i}] Wren (action): I count the crates on pier {i}.", False),
    ],
    ids=["long", "short"],
)
def test_a_section_with_a_new_last_line_encodes_it_and_the_line_before_only(
    count, template, past_cache
):
    lines = [template.format(i=i) for i in range(count)]
    section = "\n".join(["## Recent events", *lines])
    assert (len(section) > tokens.CACHED_TEXT_CHARS) == past_cache
    assert tokens.count(section) == encode(section)
    before = tokens._count_line_cached.cache_info()
    moved = "\n".join(["## Recent events", *lines[1:], f"[R{count}] Cassia (action): I close it."])
    assert tokens.count(moved) == encode(moved)
    after = tokens._count_line_cached.cache_info()
    assert after.misses - before.misses == 1  # the old last line, now with its newline
    assert after.hits - before.hits == len(lines) - 1  # the header and the lines kept


@settings(max_examples=300)
@given(st.lists(texts, min_size=1, max_size=8))
def test_a_short_text_of_several_lines_counts_the_same_as_one_encoding_of_it(lines):
    text = "\n".join(lines)[: tokens.CACHED_TEXT_CHARS]
    tokens._count_cached.cache_clear()  # counted afresh, not a cached earlier answer
    assert tokens.count(text) == encode(text)


@settings(max_examples=400)
@given(st.lists(texts, max_size=12))
def test_lines_counted_without_joining_them_count_as_their_joined_text(lines):
    assert tokens.count_joined(lines) == encode("\n".join(lines))


@settings(max_examples=60)
@given(st.lists(texts, min_size=30, max_size=60))
def test_a_long_section_counted_by_its_lines_counts_as_one_encoding_of_it(lines):
    lines = [line or "x" for line in lines] * (tokens.CACHED_TEXT_CHARS // 30 + 2)
    assert tokens.count_joined(lines) == encode("\n".join(lines))


def test_a_section_counted_by_its_lines_looks_each_line_up_and_encodes_only_a_new_one(
    monkeypatch,
):
    lines = ["## Recent events"] + [f"[R{i}] Wren (action): I count crate {i}." for i in range(50)]
    assert tokens.count_joined(lines) == encode("\n".join(lines))
    name, counter = tokens._counter()
    encoded: list[str] = []

    def counting(text: str) -> int:
        encoded.append(text)
        return counter(text)

    monkeypatch.setattr(tokens, "_counter", lambda: (name, counting))
    moved = [*lines, "[R50] Cassia (action): I close it."]
    assert tokens.count_joined(moved) == encode("\n".join(moved))
    # The old last line, now with its newline, and the new last line: nothing else.
    assert encoded == [lines[-1] + "\n", moved[-1]]


def test_lines_that_would_join_the_line_before_are_counted_joined():
    lines = ["## Recent events", "  | a continuation", "", "\tx"]
    assert tokens.count_joined(lines) == encode("\n".join(lines))
    assert tokens.count_joined([]) == 0
