"""SPEC §5.7: each of the seven strategies builds the pack it promises."""

from __future__ import annotations

import pytest

from context_engine.pack import build_pack
from context_engine.strategies import tiered
from context_engine.types import SECTION_NAMES, STRATEGIES
from tests.context_engine.helpers import (
    Log,
    config,
    digest,
    field,
    lore,
    pack_input,
    refs,
    section,
    text,
    with_retrieval,
    world,
)


def campaign() -> Log:
    log = Log()
    for r in range(1, 13):
        log.add(r, "DM", "narrative", f"Round {r}: the wind howls over Blackmoor. First. Second.")
        log.add(r, "Thorin", "action", f"T{r}: I sharpen the void-chisel and wait.")
        log.add(r, "Cassia", "action", f"C{r}: I scout ahead along the ridge.")
    return log


def rich(strategy: str, **overrides):
    overrides.setdefault("input_text", "What now?")
    return pack_input(
        "Thorin",
        campaign(),
        config=config(strategy=strategy, **overrides.pop("cfg", {})),
        lore=(lore(1, "void-chisel", "LOREMARK a chisel that cuts shadows."),),
        digest=digest("DIGESTMARK the party left the city.", round_to=8),
        world_state=world(field("weather", "STATEMARK a storm", 12)),
        **overrides,
    )


def turn_items(pack):
    return [i for i in section(pack, "recent").items if i.kind in ("turn", "anchor")]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_returns_all_sections_in_table_order_within_budget(strategy):
    pack = build_pack(rich(strategy))
    assert [s.name for s in pack.sections] == list(SECTION_NAMES)
    assert pack.strategy == strategy
    assert pack.total_tokens <= pack.budget
    assert all(s.tokens <= s.budget for s in pack.sections)
    assert "You are Thorin" in section(pack, "identity").text
    assert "What now?" in section(pack, "input").text


def test_an_unknown_strategy_is_rejected():
    with pytest.raises(ValueError, match="Unknown strategy"):
        build_pack(rich("vibes"))


def test_full_history_shows_every_visible_turn_and_no_digest():
    pack = build_pack(rich("full_history"))
    assert len(turn_items(pack)) == 36
    assert section(pack, "digest").text == ""
    assert "LOREMARK" in text(pack) and "STATEMARK" in text(pack)


def test_full_history_hard_cuts_the_oldest_lines_with_a_warning():
    cfg = {"budgets": {"recent": 200}, "lend_unused_budget": False}
    pack = build_pack(rich("full_history", cfg=cfg))
    recent = section(pack, "recent")
    assert "C12: I scout ahead" in recent.text  # the newest line survives
    assert "Round 1:" not in recent.text
    assert recent.tokens <= 200 and recent.trimmed
    assert any("full history" in w for w in pack.warnings)


def test_full_history_is_the_whole_history_up_to_the_total_budget():
    # The transcript's own share (200) is far too small; what the others leave is lent.
    pack = build_pack(rich("full_history", cfg={"budgets": {"recent": 200}}))
    recent = section(pack, "recent")
    assert "Round 1:" in recent.text and "C12: I scout ahead" in recent.text
    assert len(turn_items(pack)) == len(campaign().turns)
    assert recent.borrowed > 0 and not recent.trimmed
    assert pack.total_tokens <= pack.budget


def test_sliding_window_has_only_the_last_n_turns_hook_and_bios():
    pack = build_pack(rich("sliding_window", cfg={"window_turns": 5}))
    assert len(turn_items(pack)) == 5
    assert "C12:" in section(pack, "recent").text
    for marker in ("LOREMARK", "STATEMARK", "DIGESTMARK"):
        assert marker not in text(pack)
    assert "A dwarf smith with a grudge." in section(pack, "frozen").text


def test_rolling_summary_is_the_digest_plus_the_hot_window():
    pack = build_pack(rich("rolling_summary", cfg={"hot_window_rounds": 2}))
    assert "DIGESTMARK" in section(pack, "digest").text
    assert {i.ref for i in turn_items(pack)} == {
        f"turn:{t.id}" for t in campaign().turns if t.round >= 11
    }
    assert "LOREMARK" not in text(pack) and "STATEMARK" not in text(pack)


def test_structured_state_is_state_and_lore_with_a_small_window():
    pack = build_pack(rich("structured_state"))
    assert "STATEMARK" in section(pack, "state").text
    assert "LOREMARK" in section(pack, "frozen").text
    assert len(turn_items(pack)) == 4
    assert "DIGESTMARK" not in text(pack)


def test_layered_fills_every_layer():
    pack = build_pack(
        with_retrieval(rich("layered", input_text="Where is the void-chisel from round one?"))
    )
    for name in SECTION_NAMES:
        assert section(pack, name).text, name
    in_recent = {t.round for t in campaign().turns if f"turn:{t.id}" in refs(pack, "recent")}
    assert {9, 10, 11, 12} <= in_recent  # the hot window, whole
    assert "void-chisel" in section(pack, "retrieval").text  # round one, recalled


def test_triage_keeps_three_turns_in_full_bullets_for_turns_four_to_ten_and_the_digest():
    pack = build_pack(rich("triage"))
    recent = section(pack, "recent")
    full = [i for i in recent.items if i.kind == "turn"]
    bullets = [i for i in recent.items if i.kind == "bullet"]
    assert len(full) == 3 and len(bullets) == 7
    assert "- R10 DM: Round 10: the wind howls over Blackmoor. …" in recent.text  # 1st sentence
    assert "[R12] Cassia (action): C12: I scout ahead along the ridge." in recent.text
    assert "DIGESTMARK" in section(pack, "digest").text
    assert "STATEMARK" in section(pack, "state").text


def test_triage_keeps_the_last_dm_choice_in_full_even_among_the_bullets():
    log = campaign()
    choice = log.add(12, "DM", "choice", "Cross the ridge or camp?")
    for i in range(4):
        log.add(12, "Thorin", "action", f"Late step {i}.")
    pack = build_pack(pack_input("Thorin", log, config=config(strategy="triage")))
    full = [i.ref for i in section(pack, "recent").items if i.kind == "turn"]
    assert f"turn:{choice.id}" in full and len(full) == 4


def test_tiered_repeats_the_key_instructions_at_the_end_sandwich():
    pack = build_pack(rich("tiered"))
    identity = section(pack, "identity").text
    final = section(pack, "input").text
    assert "You poisoned Lord Vane." in identity
    assert "Reminder: you are Thorin" in final and "You poisoned Lord Vane." in final
    assert final.rstrip().endswith("What now?")


def test_tiered_keeps_the_last_rounds_in_full_and_condenses_older_rounds():
    pack = build_pack(rich("tiered"))
    recent = section(pack, "recent")
    full_rounds = {
        t.round
        for t in campaign().turns
        if f"turn:{t.id}" in [i.ref for i in recent.items if i.kind == "turn"]
    }
    assert full_rounds == {11, 12}
    condensed = [i for i in recent.items if i.kind == "condensed"]
    assert len(condensed) == 6  # rounds 9 and 10 of the 4-round window
    assert recent.text.index("Earlier in this scene") < recent.text.index("Now (in full)")


def test_tiered_enforces_per_tier_budgets():
    roomy = build_pack(rich("tiered"))
    squeezed = build_pack(
        rich("tiered", cfg={"tier_budgets": (("hot", 6000), ("warm", 40), ("cold", 30))})
    )
    assert [i for i in section(squeezed, "recent").items if i.kind == "condensed"] == []
    cold = sum(section(squeezed, name).tokens for name in ("rules", "digest", "retrieval"))
    assert cold <= 30
    assert section(squeezed, "digest").tokens < section(roomy, "digest").tokens
    assert "A dwarf smith with a grudge." in section(squeezed, "frozen").text  # never cut


def test_tiered_default_tier_budgets_split_the_total():
    budgets = tiered.tier_budgets(rich("tiered"))
    assert sum(budgets.values()) == 13000
    assert budgets["hot"] > budgets["cold"] > budgets["warm"]
