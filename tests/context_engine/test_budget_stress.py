"""Budget stress (SENTINEL §9.3): one section over its cap on its own is truncated
deterministically, logged, warned about, and visible in /context debug."""

from __future__ import annotations

import pytest

from context_engine import tokens
from context_engine.pack import build_pack
from context_engine.render import pack_to_json, render_debug
from context_engine.types import ParticipantView
from tests.context_engine.helpers import (
    CASSIA,
    DM,
    JUDGE,
    THORIN,
    Log,
    config,
    digest,
    field,
    pack_input,
    section,
    world,
)

HUGE = " ".join(f"Clause {i}: the rule of the road is to keep the lantern lit." for i in range(400))


def small_log() -> Log:
    log = Log()
    log.add(1, "DM", "narrative", "A calm morning.")
    log.add(1, "Thorin", "action", "I stretch.")
    return log


def assert_truncated(pack, name: str, cap: int):
    s = section(pack, name)
    assert s.tokens <= cap and s.tokens > 0
    assert s.trimmed
    events = [e for e in pack.trim_log if e.section == name and e.action == "truncated"]
    assert len(events) == 1 and events[0].tokens_saved > 0
    assert any(w.startswith(f"{name}:") for w in pack.warnings)
    report = render_debug(pack)
    assert f"{events[0].ref}: {events[0].reason}" in report
    assert any(f"- {w}" in report for w in pack.warnings)
    assert pack.total_tokens <= pack.budget


@pytest.mark.parametrize("strategy", ["layered", "full_history", "triage", "tiered"])
def test_huge_rules_are_truncated_with_a_warning_in_every_strategy(strategy):
    pack = build_pack(
        pack_input("Thorin", small_log(), rules=HUGE, config=config(strategy=strategy))
    )
    assert_truncated(pack, "rules", 1500)
    assert section(pack, "rules").text == tokens.truncate(section(pack, "rules").text, 1500)
    assert "A calm morning." in section(pack, "recent").text  # the rest is untouched


def test_a_huge_world_state_is_truncated_with_a_warning():
    ws = world(*(field(f"field_{i:03}", f"value {i} " * 20, 10, mutations=i) for i in range(80)))
    pack = build_pack(pack_input("Thorin", small_log(), world_state=ws, current_round=10))
    assert_truncated(pack, "state", 1000)


def test_a_huge_digest_is_truncated_with_a_warning():
    pack = build_pack(pack_input("Thorin", small_log(), digest=digest(HUGE)))
    assert_truncated(pack, "digest", 2000)


def test_a_huge_input_is_truncated_with_a_warning():
    pack = build_pack(pack_input("Thorin", small_log(), input_text=HUGE))
    assert_truncated(pack, "input", 500)


def test_a_huge_identity_prompt_is_truncated_with_a_warning():
    wordy = ParticipantView("Thorin", "player", bio="A dwarf.", identity=HUGE)
    pack = build_pack(pack_input("Thorin", small_log(), participants=(DM, wordy, CASSIA, JUDGE)))
    assert_truncated(pack, "identity", 1000)


def test_a_single_enormous_turn_is_truncated_not_silently_lost():
    log = small_log()
    log.add(1, "DM", "choice", HUGE)
    pack = build_pack(pack_input("Thorin", log, config=config(lend_unused_budget=False)))
    recent = section(pack, "recent")
    assert recent.tokens <= 3500
    assert "Clause 0:" in recent.text
    assert any(w.startswith("recent:") for w in pack.warnings)


def test_with_lending_an_enormous_turn_uses_the_room_others_left_within_the_total():
    log = small_log()
    log.add(1, "DM", "choice", HUGE)
    pack = build_pack(pack_input("Thorin", log))
    recent = section(pack, "recent")
    assert recent.borrowed > 0 and recent.tokens > 3500
    assert "Clause 0:" in recent.text
    assert pack.total_tokens <= pack.budget


def test_stress_output_is_deterministic():
    inp = pack_input("Thorin", small_log(), rules=HUGE, digest=digest(HUGE), input_text=HUGE)
    assert pack_to_json(build_pack(inp), debug=True) == pack_to_json(build_pack(inp), debug=True)


def test_bios_are_complete_even_when_the_frozen_section_is_far_too_small():
    pack = build_pack(pack_input("Thorin", small_log(), config=config(budgets={"frozen": 5})))
    frozen = section(pack, "frozen").text
    for p in (DM, THORIN, CASSIA):
        assert p.bio in frozen
    assert any("never cut" in w for w in pack.warnings)
    assert "never cut" in render_debug(pack)
