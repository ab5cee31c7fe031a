"""SPEC §5.6 WorldState pruning and §5.8 passive retrieval."""

from __future__ import annotations

from context_engine import retrieval, state
from context_engine.pack import build_pack
from tests.context_engine.helpers import (
    Log,
    config,
    field,
    lore,
    pack_input,
    section,
    with_retrieval,
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
    inp = with_retrieval(
        pack_input("Thorin", log, input_text="Use the brass astrolabe on the lock")
    )
    # Both round-2 turns name the brass astrolabe (two words); the round-5 turn only the
    # astrolabe, so it ranks below them.
    assert {t.id for t in inp.retrieval_turns[:2]} == {log.turns[0].id, log.turns[1].id}
    hits = retrieved_refs(build_pack(inp))
    assert hits[:2] == [f"turn:{log.turns[0].id}", f"turn:{log.turns[1].id}"]  # story order
    assert "cracked lens" in section(build_pack(inp), "retrieval").text


def test_retrieval_presets_set_how_many_hits_and_neighbours():
    log = Log()
    for i in range(12):
        log.add(1, "DM", "narrative", f"Legend {i} of the astrolabe.")
        log.add(1, "Cassia", "action", f"I listen to legend {i}.")
    for r in range(11, 15):
        log.add(r, "DM", "narrative", f"Round {r}: the tower looms over the marsh.")
    counts = {}
    for preset in ("minimal", "standard"):
        cfg = config(retrieval_preset=preset)
        pack = build_pack(
            with_retrieval(pack_input("Thorin", log, input_text="astrolabe", config=cfg))
        )
        retrieved = section(pack, "retrieval").text
        counts[preset] = (retrieved.count("Legend"), retrieved.count("I listen"))
    assert counts["minimal"] == (8, 0)  # 8 hits, no neighbours
    assert counts["standard"] == (12, 12)  # every hit, each with the reply beside it


def exchange_campaign(weaker_fillers: int = 0, weaker: int = 10) -> Log:
    """Round 1: the best hit (the abbess's astrolabe) between three filler turns a side;
    rounds 2-(weaker + 1): ``weaker`` weaker hits (the astrolabe alone), each with a
    reply, after ``weaker_fillers`` turns of small talk."""
    log = Log()
    for i in range(3):
        log.add(1, "Cassia", "action", f"I hum tune number {i} quietly.")
    log.add(1, "DM", "narrative", "The brass astrolabe of the drowned abbess glows.")
    for i in range(3):
        log.add(1, "Cassia", "action", f"I tap rhythm number {i} softly.")
    for r in range(2, weaker + 2):
        for i in range(weaker_fillers):
            log.add(r, "Wren", "action", f"I whistle, {r} {i}.")
        log.add(r, "Thorin", "action", f"I polish the astrolabe, time {r}.")
        log.add(r, "Cassia", "action", f"I keep watch, shift {r}.")
    for r in range(100, 104):
        log.add(r, "DM", "narrative", f"Round {r}: rain on the marsh.")
    return log


def retrieved_with_budget(log: Log, budget: int) -> str:
    cfg = config(budgets={"retrieval": budget}, lend_unused_budget=False)
    inp = pack_input("Thorin", log, input_text="the brass astrolabe of the abbess", config=cfg)
    return section(build_pack(with_retrieval(inp)), "retrieval").text


def test_with_room_the_best_hit_brings_three_turns_a_side_and_every_hit_its_reply():
    text = retrieved_with_budget(exchange_campaign(), 2000)
    assert (text.count("hum tune"), text.count("tap rhythm")) == (3, 3)
    assert (text.count("polish"), text.count("keep watch")) == (10, 10)


def test_with_room_a_weaker_hit_still_brings_one_turn_a_side():
    # Two turns of small talk before every weaker hit: one a side shows the nearest
    # only; the two best hits' wider exchange is not every hit's. The second best
    # follows round 11, so its three turns before are that round's polish, watch and
    # nearest whistle.
    log = exchange_campaign(weaker_fillers=2)
    log.add(12, "DM", "narrative", "The abbess hides the brass astrolabe.")
    text = retrieved_with_budget(log, 2000)
    assert (text.count("hum tune"), text.count("tap rhythm")) == (3, 3)
    assert text.count("polish") == 10
    assert text.count("I whistle") == 10  # the nearest of each pair, not both
    assert all(f"I whistle, {r} 1." in text for r in range(3, 12))


def test_when_short_the_best_hits_exchange_narrows_so_that_every_hit_still_fits():
    # 300 tokens hold every hit with one turn a side of the best; three a side of it
    # (six turns) would push the weakest hits out, and all 11 are in the better half
    # of the preset's 40 (`retrieval.kept_hits`), which the exchange never displaces.
    text = retrieved_with_budget(exchange_campaign(), 300)
    assert text.count("polish") == 10
    assert (text.count("hum tune"), text.count("tap rhythm")) == (1, 1)
    assert "hum tune number 2" in text and "tap rhythm number 0" in text  # the nearest


def test_the_best_hits_exchange_may_push_out_only_the_lower_half_of_the_hits():
    # 39 weaker hits (40 with the best, the standard preset's): 600 tokens cannot hold
    # them all, but hold the better half with three turns a side of the best.
    log = exchange_campaign(weaker=39)
    assert retrieved_with_budget(log, 4000).count("polish") == 39  # with room: every hit
    text = retrieved_with_budget(log, 600)
    assert (text.count("hum tune"), text.count("tap rhythm")) == (3, 3)
    assert retrieval.kept_hits(retrieval.preset("standard")) - 1 <= text.count("polish") < 39
    # Where the better half would not fit beside it, the exchange stays narrow.
    text = retrieved_with_budget(log, 460)
    assert (text.count("hum tune"), text.count("tap rhythm")) == (1, 1)


def test_retrieval_never_repeats_a_turn_already_in_the_recent_window():
    log = dormant_campaign()
    pack = build_pack(pack_input("Thorin", log, input_text="the tower over the marsh"))
    in_window = {i.ref for i in section(pack, "recent").items}
    assert in_window and not in_window & set(retrieved_refs(pack))


def test_nothing_is_retrieved_when_nothing_matches():
    pack = build_pack(pack_input("Thorin", dormant_campaign(), input_text="xyzzy plugh"))
    assert section(pack, "retrieval").text == ""


def test_when_retrieval_is_short_the_best_ranked_hit_stays():
    log = Log()
    log.add(14, "Thorin", "action", "I wait.")
    weak, strong, other = (
        log.turns[0].__class__(
            id=500 + i, seq=i, round=1, speaker="DM", kind="narrative", content=c
        )
        for i, c in enumerate(
            ("A lens glints.", "The brass lens of the astrolabe.", "Another lens in a drawer."), 1
        )
    )
    cfg = config(budgets={"retrieval": 40}, lend_unused_budget=False)
    pack = build_pack(
        pack_input(
            "Thorin",
            log,
            input_text="brass astrolabe lens",
            retrieval_turns=(strong, weak, other),
            config=cfg,
        )
    )
    assert retrieved_refs(pack) == ["turn:502"]


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


def test_a_lore_entry_edited_between_two_packs_is_retrieved_as_edited():
    """The facts' index is kept per lore (`retrieval._fact_index`): an edited definition
    is other lore, ranked and shown anew."""
    log = Log()
    log.add(9, "DM", "narrative", "Night.")
    relics = tuple(
        lore(i, f"Relic{i}", f"An old relic number {i}.", last_seen_round=i) for i in range(1, 9)
    )

    def retrieved(moonwell) -> str:
        pack = build_pack(
            pack_input(
                "Thorin",
                log,
                lore=(*relics, moonwell),
                input_text="Go to the Moonwell",
                config=config(budgets={"frozen": 120}),
            )
        )
        return section(pack, "retrieval").text

    before = retrieved(lore(50, "Moonwell", "A well that shows the future.", last_seen_round=0))
    after = retrieved(lore(50, "Moonwell", "A well that drowns the past.", last_seen_round=0))
    assert "- Moonwell (term): A well that shows the future." in before
    assert "- Moonwell (term): A well that drowns the past." in after
    assert "shows the future" not in after
