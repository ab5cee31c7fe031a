"""SPEC §5: section budgets are shares, not walls — what a section leaves unused is lent,
in one fixed and logged order, to retrieval and then to the recent window."""

from __future__ import annotations

from dataclasses import replace

from context_engine.arena.generate import generate_campaign
from context_engine.arena.transcript import history_from_transcript
from context_engine.candidates import readable_turn
from context_engine.pack import build_pack
from context_engine.types import DEFAULT_BUDGETS, SECTION_NAMES
from tests.context_engine.helpers import (
    Log,
    config,
    event,
    pack_input,
    section,
    with_retrieval,
)


def long_campaign(rounds: int = 40) -> Log:
    log = Log()
    for r in range(1, rounds + 1):
        log.add(r, "DM", "narrative", f"Round {r}: the caravan crosses dune {r} at dusk.")
        log.add(r, "Thorin", "action", f"I mark waystone {r} with chalk and count the camels.")
        log.add(r, "Cassia", "action", f"I scout ridge {r} for the salt raiders.")
    log.add(3, "Cassia", "action", "I bury the sapphire key under the third waystone.")
    return log


def inp(rounds: int = 40, **cfg):
    return with_retrieval(
        pack_input(
            "Thorin",
            long_campaign(rounds),
            input_text="Where did Cassia bury the sapphire key?",
            config=config(**cfg),
        )
    )


def test_what_other_sections_leave_unused_goes_to_retrieval_then_to_the_recent_window():
    pack = build_pack(inp(budgets={"recent": 200}))  # the window needs more than its share
    retrieval, recent = section(pack, "retrieval"), section(pack, "recent")
    assert retrieval.borrowed > 0 and retrieval.budget == DEFAULT_BUDGETS["retrieval"]
    assert retrieval.tokens == retrieval.budget + retrieval.borrowed
    assert "sapphire key" in retrieval.text
    # Retrieval showed every hit it had; the rest of the loan reached the window.
    assert recent.borrowed > 0
    loans = [e for e in pack.trim_log if e.action == "borrowed"]
    assert [e.section for e in loans] == ["recent", "retrieval"]  # logged in table order
    assert all(e.cause == "lending" and e.tokens_saved > 0 for e in loans)
    assert pack.total_tokens <= pack.budget


def test_a_pack_spends_most_of_its_budget_when_there_is_history_to_spend_it_on():
    log = Log()
    for r in range(1, 121):  # about 25,000 tokens, in turns of a usual length
        for speaker in ("DM", "Thorin", "Cassia"):
            log.add(r, speaker, "action", f"{speaker} in round {r}: " + "the dunes roll on. " * 12)
    pack = build_pack(with_retrieval(pack_input("Thorin", log, input_text="Where now?")))
    assert pack.total_tokens >= 0.8 * pack.budget


def test_a_history_smaller_than_the_budget_is_in_the_pack_whole():
    base = inp()
    pack = build_pack(base)
    shown = {i.ref for s in pack.sections for i in s.items}
    assert {f"turn:{t.id}" for t in base.turns} <= shown


def test_with_lending_off_every_section_keeps_its_own_cap():
    pack = build_pack(inp(lend_unused_budget=False))
    for name in SECTION_NAMES:
        assert section(pack, name).budget == DEFAULT_BUDGETS[name]
        assert section(pack, name).borrowed == 0
    assert not [e for e in pack.trim_log if e.action == "borrowed"]


def test_no_turn_is_shown_twice_when_the_window_borrows_after_retrieval():
    pack = build_pack(inp())
    turns = [
        i.ref for s in pack.sections for i in s.items if i.kind in ("turn", "anchor")
    ]  # every turn line of the pack
    assert len(turns) == len(set(turns))


def test_after_a_checkpoint_ranked_retrieval_borrows_what_the_window_no_longer_needs():
    base = inp(rounds=300)
    last = base.turns[-1]
    checked = with_retrieval(replace(base, events=(event("checkpoint", last.seq, last.round),)))
    pack = build_pack(checked)
    retrieval = section(pack, "retrieval")
    assert "sapphire key" in retrieval.text
    assert retrieval.borrowed > 0
    assert pack.total_tokens > 2 * (section(pack, "recent").tokens + retrieval.budget)


def test_full_history_above_its_size_keeps_every_readable_turn_of_a_120_round_campaign():
    history, _ = history_from_transcript(generate_campaign(rounds=120, players=4, seed=3))
    role = next(p.role for p in history.participants if p.kind == "player")
    readable = [t for t in history.turns if readable_turn(t, role, False)]
    total = 1_000_000
    budgets = {
        name: total * b // sum(DEFAULT_BUDGETS.values()) for name, b in DEFAULT_BUDGETS.items()
    }
    cfg = config(strategy="full_history", budgets=budgets)
    pack = build_pack(
        pack_input(
            role,
            history.turns,
            participants=history.participants,
            current_round=history.last_round,
            config=cfg,
        )
    )
    shown = {i.ref for i in section(pack, "recent").items}
    assert shown == {f"turn:{t.id}" for t in readable}


def test_after_a_clear_lent_room_never_brings_the_cleared_turns_back():
    base = inp(rounds=300)
    last = base.turns[-1]
    cleared = build_pack(replace(base, events=(event("clear", last.seq - 8, last.round),)))
    window = {i.ref for i in section(cleared, "recent").items}
    assert not window & {f"turn:{t.id}" for t in base.turns if t.seq <= last.seq - 12}
