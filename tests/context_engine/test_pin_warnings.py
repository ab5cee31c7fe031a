"""Strain warning on pins (issue 10): a role's own /search, /lore or /timeline results that
overflow the retrieval budget or raise the strain tier put a warning on the pack."""

from __future__ import annotations

import pytest

from context_engine.commands import retrieval_line, split_retrieval_lines
from context_engine.pack import build_pack
from context_engine.relay import ANSWER, OfflineAgent, Step, step_instruction
from tests.context_engine.helpers import Log, config, pack_input

SMALL = {
    "identity": 200,
    "rules": 100,
    "frozen": 300,
    "state": 100,
    "digest": 100,
    "recent": 800,
    "input": 200,
}


def old_log() -> Log:
    log = Log()
    for number in range(1, 13):
        log.add(
            number,
            "DM",
            "narrative",
            f"Round {number}: the tide brings driftwood, gulls and old ropes; "
            + "the harbour master counts barrels and mutters about the weather. " * 6,
        )
    return log


def build(log, pinned, strategy, retrieval_budget):
    cfg = config(strategy=strategy, budgets={**SMALL, "retrieval": retrieval_budget})
    return build_pack(pack_input("Thorin", log, config=cfg, pinned_retrieval=tuple(pinned)))


@pytest.mark.parametrize("strategy", ["layered", "tiered"])
def test_pins_over_the_retrieval_budget_warn_and_are_cut(strategy):
    log = old_log()
    pack = build(log, log.all()[:6], strategy, retrieval_budget=150)
    assert any("over the retrieval budget of 150" in w for w in pack.warnings)
    assert not any("Pinned" in w for w in build(log, (), strategy, 150).warnings)


@pytest.mark.parametrize("strategy", ["layered", "tiered"])
def test_pins_that_raise_the_strain_tier_say_so(strategy):
    log = old_log()
    # A retrieval budget that leaves the unpinned pack under 70% of the total.
    for budget in range(200, 4000, 50):
        plain = build(log, (), strategy, budget)
        if plain.strain == "normal":
            break
    pinned = build(log, log.all()[:10], strategy, budget)
    if pinned.strain == "normal":
        pytest.fail("the pins should raise strain in this setup")
    assert any(f"raises memory strain from normal to {pinned.strain}" in w for w in pinned.warnings)


def test_a_pin_the_role_may_not_read_is_neither_shown_nor_measured():
    log = old_log()
    hidden = log.add(13, "DM", "gm_note", "ZEBRA " * 200, visibility=["DM"])
    pack = build(log, (hidden,), "layered", retrieval_budget=150)
    assert not any("Pinned" in w for w in pack.warnings)
    assert "ZEBRA" not in " ".join(s.text for s in pack.sections)


def test_command_lines_are_split_out_of_an_answer_wherever_they_stand():
    commands, rest = split_retrieval_lines(
        "/search the sealed door\nPUBLIC: I knock.\n  /TIMELINE 2..4 \n/dance\nand/or"
    )
    assert [(c.command, c.query) for c in commands] == [
        ("search", "the sealed door"),
        ("timeline", "2..4"),
    ]
    assert rest == "PUBLIC: I knock.\n/dance\nand/or"


def test_only_a_single_slash_line_is_a_command():
    assert retrieval_line("/lore  Quill   stone ") == retrieval_line("/lore Quill stone")
    assert retrieval_line("/lore").query == ""
    assert retrieval_line("and/or") is None
    assert retrieval_line("/search a\nb") is None
    assert not retrieval_line("/dance now").known


def test_every_step_offers_the_memory_tool_and_the_offline_dm_uses_it_once():
    step = Step(ANSWER, "DM", "dm", 3, whisperers=("Thorin",))
    assert "'/search QUERY', '/lore TERM' or '/timeline FROM..TO'" in step_instruction(step)
    pack = build_pack(pack_input("DM", old_log()))
    assert OfflineAgent(tools=True).respond(pack, step) == "/timeline 3..3"
    answer = OfflineAgent(tools=True).respond(pack, step, looked_up=True)
    assert answer.startswith("WHISPER to Thorin:")
    assert OfflineAgent().respond(pack, step) == answer  # without tools: answers at once
