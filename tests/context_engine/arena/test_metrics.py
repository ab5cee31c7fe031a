"""The Arena's metrics on a hand-checked campaign (tests/context_engine/arena/small.py)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from context_engine.arena import (
    ArenaOptions,
    FactView,
    Replay,
    checkpoints_for,
    recommend,
    run_arena,
)
from context_engine.arena.run import pack_text
from context_engine.pack import build_pack
from tests.context_engine.arena.small import FACTS, history

EVERY_ROUND = ArenaOptions(strategies=("full_history",), budgets=(13000,), every=1)


def fake_clock():
    ticks = itertools.count()
    return lambda: next(ticks) / 1000  # every build "takes" exactly 1 ms


def row(report, strategy, budget=13000):
    return next(r for r in report["results"] if (r["strategy"], r["budget"]) == (strategy, budget))


def test_full_history_keeps_every_fact_each_role_may_read():
    report, details = run_arena(Replay(history()), FACTS, EVERY_ROUND, clock=fake_clock())
    assert report["checkpoints"] == [1, 2, 3]
    r = row(report, "full_history")
    # Entitled (role × checkpoint × fact): rounds 1-2: DM 3, Thorin 3, Cassia 2 (no whisper)
    # = 8 each; round 3 adds the rain for all three: 11. Total 27, all kept.
    assert details["series"][0]["entitled"] == 27
    assert r["retention"] == 1.0
    assert r["hinge_retention"] == 1.0
    assert r["leaks"] == 0
    assert r["build_ms_median"] == 1.0


def test_a_strategy_that_drops_facts_scores_lower_by_the_hand_count():
    options = ArenaOptions(strategies=("full_history", "sliding_window"), budgets=(13000,), every=1)
    report, details = run_arena(Replay(history(window_turns=1)), FACTS, options)
    sliding = row(report, "sliding_window")
    # The window is the last visible turn: round 1 → the Quorvex hinge (1 of 3, 3, 2),
    # round 2 → "Cassia waits" (nothing), round 3 → the rain (1 each). 6 of 27.
    assert sliding["retention"] == round(6 / 27, 4)
    # Hinge: kept by all three at round 1, by nobody at rounds 2 and 3: 3 of 9.
    assert sliding["hinge_retention"] == round(3 / 9, 4)
    assert sliding["retention"] < row(report, "full_history")["retention"]
    assert report["recommended"] == {"strategy": "full_history", "budget": 13000}
    series = {s["strategy"]: s["retention_by_checkpoint"] for s in details["series"]}
    assert series["sliding_window"] == [round(3 / 8, 4), 0.0, round(3 / 11, 4)]


def test_tokens_are_the_packs_own_counts():
    replay = Replay(history())
    report, _ = run_arena(replay, FACTS, EVERY_ROUND)
    config = replace(replay.history.config, strategy="full_history")
    sizes = [
        build_pack(replay.pack_input(c, role, config)).total_tokens
        for c in (1, 2, 3)
        for role in ("DM", "Thorin", "Cassia")
    ]
    r = row(report, "full_history")
    assert r["max_tokens"] == max(sizes)
    assert r["mean_tokens"] == round(sum(sizes) / len(sizes), 1)
    assert report["full_history_tokens"] == round(sum(sizes[-3:]) / 3, 1)


def test_a_fault_injected_leaking_strategy_is_caught_and_never_recommended():
    whisper = "I stole the glassfang sigil."

    def leak_into_cassia(pack, role, checkpoint):
        if role != "Cassia" or pack.strategy != "sliding_window":
            return pack
        last = pack.sections[-1]
        sections = (*pack.sections[:-1], replace(last, text=last.text + "\n" + whisper))
        return replace(pack, sections=sections)

    options = ArenaOptions(strategies=("full_history", "sliding_window"), budgets=(13000,), every=1)
    report, details = run_arena(Replay(history()), FACTS, options, leak_probe=leak_into_cassia)
    assert row(report, "sliding_window")["leaks"] == 3  # Cassia, at each of 3 checkpoints
    assert row(report, "full_history")["leaks"] == 0
    assert report["recommended"]["strategy"] == "full_history"
    by_role = details["series"][1]["by_role"]
    assert by_role["Cassia"]["leaks"] == 3 and by_role["Thorin"]["leaks"] == 0


def test_a_revealed_secret_is_public_knowledge_not_a_leak():
    h = history()
    participants = (
        h.participants[0],
        replace(h.participants[1], secret="Find the brass idol.", reveal_round=1),
        h.participants[2],
    )
    h = replace(h, participants=participants)
    facts = (
        FactView("secret-Thorin", 0, ("Thorin",), ("brass idol",), "Thorin's goal?"),
        FactView("secret-Thorin-revealed", 2, None, ("brass idol",), "Thorin's goal?"),
    )
    report, _ = run_arena(Replay(h), facts, EVERY_ROUND)
    assert row(report, "full_history")["leaks"] == 0
    # Without the revealed fact, Cassia reading the bio after round 1 is a leak.
    report, _ = run_arena(Replay(h), facts[:1], EVERY_ROUND)
    assert row(report, "full_history")["leaks"] == 4  # Cassia and the DM, rounds 2 and 3 …
    replay = Replay(h)
    replay.prepare([1])
    cassia_at_1 = build_pack(
        replay.pack_input(1, "Cassia", replace(h.config, strategy="full_history"))
    )
    assert "brass idol" not in pack_text(cassia_at_1)  # … never before the reveal


def test_identical_runs_give_identical_reports():
    options = ArenaOptions(budgets=(4000, 13000), every=1)
    first = run_arena(Replay(history()), FACTS, options, clock=fake_clock())
    second = run_arena(Replay(history()), FACTS, options, clock=fake_clock())
    assert first == second
    assert len(first[0]["results"]) == 14


def test_a_pack_as_of_a_round_holds_nothing_from_later_rounds():
    replay = Replay(history())
    replay.prepare([1, 2])
    for strategy in ("full_history", "layered", "tiered"):
        config = replace(replay.history.config, strategy=strategy)
        text = pack_text(build_pack(replay.pack_input(2, "DM", config)))
        assert "moonmarks" in text and "Cassia waits" in text
        assert "Rain falls" not in text


def test_recommended_is_the_best_retention_without_leaks_ties_to_fewer_tokens():
    results = [
        {"strategy": "a", "budget": 8000, "retention": 0.9, "mean_tokens": 900, "leaks": 0},
        {"strategy": "b", "budget": 4000, "retention": 0.9, "mean_tokens": 500, "leaks": 0},
        {"strategy": "c", "budget": 13000, "retention": 1.0, "mean_tokens": 100, "leaks": 1},
    ]
    assert recommend(results) == {"strategy": "b", "budget": 4000}
    assert recommend(results[2:]) is None


def test_checkpoints_are_every_r_rounds_and_the_last():
    assert checkpoints_for(200, 10)[:2] == [10, 20] and checkpoints_for(200, 10)[-1] == 200
    assert checkpoints_for(25, 10) == [10, 20, 25]
    assert checkpoints_for(3, 10) == [3]


def test_bad_options_name_the_field():
    with pytest.raises(ValueError, match="strategies"):
        run_arena(Replay(history()), FACTS, ArenaOptions(strategies=("nope",)))
    with pytest.raises(ValueError, match="roles"):
        run_arena(Replay(history()), FACTS, ArenaOptions(roles=("Nobody",)))
