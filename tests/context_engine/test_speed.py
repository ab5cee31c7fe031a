"""Cheap to build: cached turn token counts are trusted, and a pack for ~60 candidate
turns builds in a few milliseconds (the loose bound here only catches pathologies;
`manage.py bench_context` prints the real figures)."""

from __future__ import annotations

import statistics
import time

import pytest

from context_engine import textops, tokens
from context_engine.pack import build_pack
from context_engine.types import STRATEGIES
from tests.context_engine.helpers import Log, config, digest, field, lore, pack_input, world

WORDS = [
    "fog",
    "lantern",
    "harbour",
    "Vane",
    "void-chisel",
    "smugglers",
    "bell",
    "tower",
    "marsh",
    "gate",
]


def sixty_turns() -> Log:
    log = Log()
    for i in range(60):
        content = f"UNIQUE{i} " + " ".join(WORDS[(i + j) % len(WORDS)] for j in range(60))
        kind = ("narrative", "action", "whisper", "intel", "choice", "system")[i % 6]
        visibility = ["Cassia", "DM"] if kind == "whisper" else None
        log.add(
            i // 6 + 1,
            ("DM", "Thorin", "Cassia")[i % 3],
            kind,
            content,
            visibility=visibility,
            hinge=i % 9 == 0,
            tokens=tokens.count(content),
        )
    return log


def rich_input(strategy: str = "layered"):
    return pack_input(
        "Thorin",
        sixty_turns(),
        config=config(strategy=strategy),
        input_text="Where is the void-chisel?",
        lore=tuple(lore(i, f"Term{i}", "A thing of the marsh.", tokens=6) for i in range(30)),
        digest=digest("Hinge Index: the bell rang. " * 20),
        world_state=world(*(field(f"f{i}", "a value", i % 10) for i in range(15))),
    )


def test_cached_turn_token_counts_are_used_instead_of_recounting(monkeypatch):
    inp = rich_input()
    contents = {t.content for t in inp.turns}
    seen: list[str] = []
    real = tokens.count

    def spy(text: str) -> int:
        seen.append(text)
        return real(text)

    textops.count.cache_clear()
    monkeypatch.setattr(tokens, "count", spy)
    build_pack(inp)
    assert seen, "the spy must see the section counts"
    assert not contents & set(seen)
    for content in contents:
        assert sum(content in text for text in seen) <= 2  # its section, at most twice


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_pack_for_sixty_candidate_turns_builds_in_milliseconds(strategy):
    inp = rich_input(strategy)
    build_pack(inp)  # warm the process-wide caches, as a running server would be
    times = []
    for _ in range(15):
        start = time.perf_counter()
        build_pack(inp)
        times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.025
