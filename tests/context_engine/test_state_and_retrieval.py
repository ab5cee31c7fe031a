"""SPEC §5.6 WorldState pruning and §5.8 passive retrieval."""

from __future__ import annotations

from context_engine import state
from context_engine.pack import build_pack
from tests.context_engine.helpers import (
    Log,
    config,
    field,
    lore,
    pack_input,
    section,
    world,
)

LONG_VALUE = "Held by the smugglers of the salt road since the second night, guarded by dogs."


def test_fields_are_hot_warm_or_cold_by_rounds_since_their_last_mutation():
    now = 20
    assert state.tier(field("a", "x", 20), now) == "hot"
    assert state.tier(field("a", "x", 19), now) == "hot"
    assert state.tier(field("a", "x", 18), now) == "warm"
    assert state.tier(field("a", "x", 10), now) == "warm"
    assert state.tier(field("a", "x", 9), now) == "cold"


def test_hot_fields_are_full_warm_fields_condensed_and_cold_fields_archived_by_name():
    snap = state.snapshot(
        (("gate_open", True), ("alarm", False)),
        (
            field("vault", LONG_VALUE, 20, mutations=4),
            field("harbour", LONG_VALUE, 16),
            field("ledger", "SECRETVALUE in the archive", 3),
        ),
        now=20,
    )
    assert f"- vault: {LONG_VALUE} (changed 4x, last in round 20)" in snap.text
    assert "- harbour: Held by the smugglers of the salt road since the second night,…" in snap.text
    assert "Archived (unchanged for over 10 rounds): ledger" in snap.text
    assert "SECRETVALUE" not in snap.text
    assert "Flags: alarm=no, gate_open=yes" in snap.text


def test_inside_a_tier_fields_are_ordered_by_recency_then_mutation_count_then_name():
    snap = state.snapshot(
        (),
        (
            field("b", "1", 20, 1),
            field("a", "1", 20, 1),
            field("c", "1", 20, 9),
            field("d", "1", 19, 50),
        ),
        now=20,
    )
    assert [line.split(":")[0] for line in snap.hot] == ["- c", "- a", "- b", "- d"]


def test_an_archived_field_comes_back_through_retrieval_when_the_input_names_it():
    log = Log()
    log.add(20, "Thorin", "action", "I look around.")
    ws = world(field("ledger", "Hidden in the archive behind the map", 3))
    pack = build_pack(
        pack_input("Thorin", log, world_state=ws, input_text="Where is the ledger now?")
    )
    retrieved = section(pack, "retrieval")
    assert "Hidden in the archive behind the map" in retrieved.text
    assert [i.ref for i in retrieved.items] == ["state:ledger"]
    assert "Hidden in the archive" not in section(pack, "state").text


def dormant_campaign() -> Log:
    log = Log()
    log.add(2, "DM", "narrative", "In the crypt you find a brass astrolabe with a cracked lens.")
    log.add(2, "Cassia", "action", "I pocket the brass astrolabe.")
    log.add(3, "DM", "narrative", "A quiet road north.")
    log.add(5, "DM", "narrative", "The astrolabe hums when the moon rises.")
    log.add(6, "Thorin", "action", "I count our coins.")
    for r in range(11, 15):
        log.add(r, "DM", "narrative", f"Round {r}: the tower looms over the marsh.")
    return log


def retrieved_refs(pack):
    return [i.ref for i in section(pack, "retrieval").items]


def test_an_item_found_in_round_two_is_recovered_in_round_fourteen():
    log = dormant_campaign()
    pack = build_pack(pack_input("Thorin", log, input_text="Use the brass astrolabe on the lock"))
    hits = retrieved_refs(pack)
    # Both round-2 turns name the brass astrolabe (two keywords); the round-5 turn only
    # names the astrolabe, so it ranks below them. Ties go to the more recent turn.
    assert hits == [f"turn:{log.turns[1].id}", f"turn:{log.turns[0].id}"]
    assert "cracked lens" in section(pack, "retrieval").text


def test_retrieval_presets_pick_one_two_or_five_turns():
    log = dormant_campaign()
    for i in range(6):
        log.turns.insert(
            0,
            log.turns[0].__class__(
                id=900 + i,
                seq=-10 + i,
                round=1,
                speaker="DM",
                kind="narrative",
                content=f"Legend {i} of the astrolabe.",
            ),
        )
    counts = {}
    for preset in ("minimal", "standard", "deep"):
        pack = build_pack(
            pack_input(
                "Thorin", log, input_text="astrolabe", config=config(retrieval_preset=preset)
            )
        )
        counts[preset] = len([r for r in retrieved_refs(pack) if r.startswith("turn:")])
    assert counts == {"minimal": 1, "standard": 2, "deep": 5}


def test_retrieval_never_repeats_a_turn_already_in_the_recent_window():
    log = dormant_campaign()
    pack = build_pack(pack_input("Thorin", log, input_text="the tower over the marsh"))
    in_window = {i.ref for i in section(pack, "recent").items}
    assert in_window and not in_window & set(retrieved_refs(pack))


def test_nothing_is_retrieved_when_nothing_matches():
    pack = build_pack(pack_input("Thorin", dormant_campaign(), input_text="xyzzy plugh"))
    assert section(pack, "retrieval").text == ""


def test_search_hits_are_ranked_by_keywords_first_then_by_their_full_text_rank():
    log = Log()
    log.add(14, "Thorin", "action", "I wait.")
    weak = log.turns[0].__class__(
        id=501, seq=1, round=1, speaker="DM", kind="narrative", content="A lens glints."
    )
    strong = log.turns[0].__class__(
        id=502,
        seq=2,
        round=1,
        speaker="DM",
        kind="narrative",
        content="The brass lens of the astrolabe.",
    )
    other = log.turns[0].__class__(
        id=503, seq=3, round=1, speaker="DM", kind="narrative", content="Another lens in a drawer."
    )
    pack = build_pack(
        pack_input(
            "Thorin", log, input_text="brass astrolabe lens", retrieval_turns=(weak, other, strong)
        )
    )
    assert retrieved_refs(pack) == ["turn:502", "turn:501"]


def test_lore_degraded_in_the_frozen_section_is_retrieved_in_full_when_it_matches():
    log = Log()
    log.add(9, "DM", "narrative", "Night.")
    entries = tuple(
        lore(i, f"Relic{i}", f"An old relic number {i}.", last_seen_round=i) for i in range(1, 9)
    )
    entries += (lore(50, "Moonwell", "A well that shows the future.", last_seen_round=0),)
    pack = build_pack(
        pack_input(
            "Thorin",
            log,
            lore=entries,
            input_text="Go to the Moonwell",
            config=config(budgets={"frozen": 120}),
        )
    )
    assert "- Moonwell (term): A well that shows the future." in section(pack, "retrieval").text
