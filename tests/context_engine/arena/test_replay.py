"""The replay loads what the context service would: the same packs as from everything."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine.arena import ArenaOptions, FactView, History, Replay, run_arena
from context_engine.arena.generate import generate_campaign
from context_engine.arena.run import pack_text
from context_engine.arena.transcript import history_from_transcript
from context_engine.pack import build_pack
from context_engine.render import pack_to_json
from context_engine.types import PackConfig, ParticipantView, TurnView

# Strategies whose packs cannot depend on turns beyond what `history_needs` asks for
# (layered and tiered also rank any older candidates they are handed for retrieval).
EXACT = ("full_history", "sliding_window", "rolling_summary", "structured_state", "triage")


@pytest.fixture(scope="module")
def replay():
    history, _ = history_from_transcript(generate_campaign(rounds=40, players=3, seed=12))
    replay = Replay(history)
    replay.prepare([13, 40])
    return replay


@pytest.mark.parametrize("strategy", EXACT)
@pytest.mark.parametrize("round_", [13, 40])
def test_the_loaded_window_gives_the_same_pack_as_the_whole_history(replay, strategy, round_):
    config = replace(replay.history.config, strategy=strategy)
    for role in replay.roles:
        needed = replay.pack_input(round_, role, config)
        everything = replace(needed, turns=tuple(t for t in replay.turns if t.round <= round_))
        assert pack_to_json(build_pack(needed)) == pack_to_json(build_pack(everything))


def test_digests_are_folded_per_audience_as_of_the_round(replay):
    early = replay.pack_input(13, "Thorin", replay.history.config)
    late = replay.pack_input(40, "Thorin", replay.history.config)
    assert early.digest is not None and early.digest.round_to <= 12
    assert late.digest.round_to > early.digest.round_to
    assert late.digest.audience == ("Thorin",)  # his whispers make him an audience alone
    seen = {t.id for t in replay.turns if t.round <= 12}
    assert set(early.digest.source_turn_ids) <= seen


def test_lore_is_as_it_stood_and_the_dead_npc_is_invalidated_not_dropped():
    history, _ = history_from_transcript(generate_campaign(rounds=60, players=2, seed=1))
    replay = Replay(history)
    vane = next(e for e in history.lore if e.term == "Lord Vane")
    ford = next(e for e in history.lore if e.term.endswith("Ford"))
    assert ford not in replay.lore_at(ford.first_seen_round - 1)
    assert any(e.term == "Lord Vane" for e in replay.lore_at(59))
    replay.prepare([39, 41])
    config = replace(history.config, strategy="layered")
    before = pack_text(build_pack(replay.pack_input(39, "Thorin", config)))
    after = pack_text(build_pack(replay.pack_input(41, "Thorin", config)))
    assert vane.definition in before and vane.definition not in after
    assert ford.term in after


ROLES = ("DM", "Ana", "Bo", "Cy")


@st.composite
def campaigns(draw):
    """Random small campaigns where every private turn carries its own marker word."""
    turns, facts = [], []
    for index in range(draw(st.integers(4, 40))):
        round_ = 1 + index // 3
        speaker = draw(st.sampled_from(ROLES))
        kind = draw(st.sampled_from(["narrative", "whisper", "gm_note", "monologue"]))
        hinge = draw(st.booleans())
        visibility = None
        if kind == "whisper":
            others = draw(st.lists(st.sampled_from(ROLES), min_size=1, max_size=2, unique=True))
            visibility = tuple(sorted({speaker, *others}))
        elif kind == "gm_note":
            speaker, visibility = "DM", ("DM",)
        elif kind == "monologue":
            visibility = (speaker,)
        marker = f"zq{index}x"
        tags = (f"thread:{marker} plot",) if draw(st.booleans()) else ()
        content = f"{marker} is what {speaker} says. Then more happens."
        turns.append(TurnView(index + 1, index + 1, round_, speaker, kind, content, visibility,
                              tags, hinge))  # fmt: skip
        if visibility is not None:
            facts.append(FactView(f"f{index}", round_, visibility, (marker,), "What?"))
    participants = tuple(
        ParticipantView(role, "dm" if role == "DM" else "player") for role in ROLES
    )
    config = PackConfig(hot_window_rounds=draw(st.integers(1, 4)))
    return History(participants=participants, turns=tuple(turns), config=config), facts


@settings(max_examples=25)
@given(campaigns())
def test_no_strategy_at_any_budget_leaks_a_private_turn(campaign):
    history, facts = campaign
    options = ArenaOptions(budgets=(600, 13000), every=2)
    report, _ = run_arena(Replay(history), facts, options)
    assert [r for r in report["results"] if r["leaks"]] == []
