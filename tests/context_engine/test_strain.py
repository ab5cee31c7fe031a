"""SPEC §5.2: pressure, exact tier boundaries, and each tier's effect on the pack."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from context_engine import strain
from context_engine.pack import build_pack
from context_engine.types import DEFAULT_BUDGETS
from tests.context_engine.helpers import (
    Log,
    config,
    digest,
    pack_input,
    section,
    text,
    with_retrieval,
)


@pytest.mark.parametrize(
    ("untrimmed", "budget", "tier"),
    [
        (0, 13000, "normal"),
        (6999, 10000, "normal"),
        (7000, 10000, "strain_1"),
        (9099, 13000, "normal"),  # 0.69992...
        (9100, 13000, "strain_1"),  # exactly 0.70
        (8499, 10000, "strain_1"),
        (8500, 10000, "strain_2"),
        (11050, 13000, "strain_2"),  # exactly 0.85
        (9499, 10000, "strain_2"),
        (9500, 10000, "strain_3"),
        (12350, 13000, "strain_3"),  # exactly 0.95
        (20000, 10000, "strain_3"),
    ],
)
def test_tier_boundaries_are_exact(untrimmed, budget, tier):
    assert strain.tier(untrimmed, budget) == tier


def test_a_zero_budget_is_strained_as_soon_as_anything_is_needed():
    assert strain.tier(0, 0) == "normal"
    assert strain.tier(1, 0) == "strain_3"


def strained_campaign() -> Log:
    log = Log()
    for i in range(3):
        log.add(1, "DM", "narrative", f"Old scene {i}: the ember-glass lantern glows in the vault.")
    for r in range(7, 11):
        log.add(r, "DM", "narrative", f"Round {r}: fog rolls through the docks of Ashfall. " * 3)
        log.add(r, "Thorin", "action", f"Round {r}: I search the crates by the pier.")
        log.add(r, "Cassia", "action", f"Round {r}: I climb to the rooftops and watch.")
        log.add(r, "DM", "choice", f"Round {r}: do you follow the smugglers or wait?")
    return log


def inp_at(pressure: float | None, memory_text: str = "Hinge Index: the vault was sealed. " * 40):
    memory = digest(memory_text)
    base = pack_input(
        "Thorin",
        strained_campaign(),
        digest=memory,
        input_text="Where is the ember-glass lantern?",
        config=config(lend_unused_budget=False),  # the window's own mechanics
    )
    base = with_retrieval(base)
    if pressure is None:
        return base
    need = build_pack(base).untrimmed_tokens
    total = math.ceil(need / pressure)
    budgets = {name: DEFAULT_BUDGETS[name] * total // 13000 for name in DEFAULT_BUDGETS}
    budgets["input"] += total - sum(budgets.values())
    return replace(base, config=config(budgets=budgets, lend_unused_budget=False))


def turn_refs(pack):
    return [i.ref for i in section(pack, "recent").items if i.kind == "turn"]


def retrieved_turns(pack):
    return [i for i in section(pack, "retrieval").items if i.kind == "turn"]


def test_pressure_is_the_untrimmed_need_over_the_total_budget():
    pack = build_pack(inp_at(None))
    assert pack.pressure == pytest.approx(pack.untrimmed_tokens / 13000)
    # The need leaves out passive retrieval (filler sized by lending), nothing else.
    assert pack.untrimmed_tokens >= pack.total_tokens - section(pack, "retrieval").tokens


def test_the_untrimmed_need_does_not_depend_on_the_budgets():
    assert build_pack(inp_at(None)).untrimmed_tokens == build_pack(inp_at(0.9)).untrimmed_tokens


def test_a_normal_pack_keeps_the_whole_window_and_retrieves_the_old_scene():
    pack = build_pack(inp_at(None))
    assert pack.strain == "normal"
    assert len(turn_refs(pack)) == 16
    assert "Old scene" in section(pack, "retrieval").text
    assert strain.NOTICE not in text(pack)


def test_strain_1_drops_the_two_oldest_window_turns_and_keeps_retrieval():
    normal = build_pack(inp_at(None))
    pack = build_pack(inp_at(0.75))
    assert pack.strain == "strain_1"
    cut = [e.ref for e in pack.trim_log if e.reason.startswith("strain_1")]
    assert cut == turn_refs(normal)[:2]
    assert retrieved_turns(pack)
    assert strain.NOTICE not in text(pack)


def test_strain_2_turns_the_older_half_of_the_window_into_a_scene_recap_and_keeps_retrieval():
    pack = build_pack(inp_at(0.9))
    assert pack.strain == "strain_2"
    recapped = [
        e.ref for e in pack.trim_log if e.action == "summarised" and e.reason.startswith("strain_2")
    ]
    assert len(recapped) == 8
    recent = section(pack, "recent")
    assert any(i.kind == "recap" for i in recent.items)
    assert "Scene recap (rounds 7-8" in recent.text
    assert not set(recapped) & {i.ref for i in recent.items}
    assert retrieved_turns(pack)  # recall is never switched off


def test_strain_3_keeps_the_last_turns_and_inserts_the_notice():
    pack = build_pack(inp_at(0.97))
    assert pack.strain == "strain_3"
    recent = section(pack, "recent")
    assert strain.STRAIN3_MIN_WINDOW <= len(turn_refs(pack)) <= strain.STRAIN3_WINDOW
    assert recent.text.rstrip().endswith(strain.NOTICE)
    assert "Old scene" in section(pack, "retrieval").text  # recall is never switched off
    assert pack.total_tokens <= pack.budget


def test_strain_3_lends_the_digest_what_it_lacks_when_that_makes_it_whole():
    strained = inp_at(0.97)
    whole = section(build_pack(strained), "digest").items[0].tokens
    budgets = dict(strained.config.budgets)
    short_by = 10  # the digest's share is 10 tokens short of the whole digest
    budgets["input"] += budgets["digest"] - (whole - short_by)
    budgets["digest"] = whole - short_by
    inp = replace(strained, config=replace(strained.config, budgets=tuple(budgets.items())))
    pack = build_pack(inp)
    assert pack.strain == "strain_3"
    digest_section = section(pack, "digest")
    assert digest_section.tokens == whole and not digest_section.trimmed
    lent = [e for e in pack.trim_log if e.action == "lent"]
    assert [(e.ref, e.tokens_saved) for e in lent] == [("budget:recent", short_by)]
    assert pack.total_tokens <= pack.budget


def test_strain_3_gives_ranked_retrieval_the_room_a_digest_could_not_be_made_whole_with():
    pack = build_pack(inp_at(0.97))  # a digest twice its share and more
    configured = dict(inp_at(0.97).config.budgets)["digest"]
    digest_section = section(pack, "digest")
    assert digest_section.trimmed and digest_section.tokens <= configured
    assert not any(e.action == "lent" for e in pack.trim_log)
    assert pack.total_tokens <= pack.budget


def test_the_strain_3_notice_is_engine_text_visible_in_the_messages():
    from context_engine.render import to_openai_messages

    pack = build_pack(inp_at(0.97))
    assert any(strain.NOTICE in m["content"] for m in to_openai_messages(pack))
