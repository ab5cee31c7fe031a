"""SPEC §5.1: deterministic, logged trimming of the recent window and the frozen section."""

from __future__ import annotations

from context_engine.pack import build_pack
from context_engine.trimming import LONG_NARRATIVE_TOKENS
from tests.context_engine import helpers
from tests.context_engine.helpers import (
    Log,
    digest,
    lore,
    pack_input,
    refs,
    section,
    text,
)


def config(**overrides):
    """These tests look at one section's trimming under its own cap: lending off (it
    has tests of its own, at the end of this module and in test_lending.py)."""
    overrides.setdefault("lend_unused_budget", False)
    return helpers.config(**overrides)


LONG = " ".join(["The storm rolls over the harbour walls and the lamps gutter."] * 20)


def mixed_window():
    log = Log()
    t = {
        "old_choice": log.add(1, "DM", "choice", "Left door or right door?"),
        "sys1": log.add(1, "DM", "system", "Autosave complete."),
        "long": log.add(1, "DM", "narrative", LONG),
        "intel": log.add(1, "DM", "intel", "The guards change shift at midnight."),
        "sys2": log.add(1, "DM", "system", "Player joined."),
        "action": log.add(1, "Cassia", "action", "I pick the lock."),
        "last_choice": log.add(1, "DM", "choice", "Fight or flee?"),
        "newest": log.add(1, "Thorin", "action", "I raise my axe."),
    }
    return log, t


def dropped(pack, name="recent"):
    return [e.ref for e in pack.trim_log if e.section == name and e.action == "dropped"]


def test_the_long_narrative_in_the_fixture_counts_as_long():
    log, t = mixed_window()
    pack = build_pack(pack_input("Thorin", log))
    item = next(i for i in section(pack, "recent").items if i.ref == f"turn:{t['long'].id}")
    assert item.tokens > LONG_NARRATIVE_TOKENS


def test_the_window_drops_system_chatter_then_long_narrative_then_intel_then_actions_then_choices():
    log, t = mixed_window()
    pack = build_pack(pack_input("Thorin", log, config=config(budgets={"recent": 45})))
    expected = ["sys1", "sys2", "long", "intel", "action", "old_choice"]
    assert dropped(pack) == [f"turn:{t[name].id}" for name in expected]


def test_the_last_dm_choice_and_the_newest_turn_survive_a_tiny_budget():
    log, t = mixed_window()
    pack = build_pack(pack_input("Thorin", log, config=config(budgets={"recent": 45})))
    kept = refs(pack, "recent")
    assert kept == [f"turn:{t['last_choice'].id}", f"turn:{t['newest'].id}"]
    assert section(pack, "recent").tokens <= 45


def test_trimming_stops_once_the_window_fits():
    log, t = mixed_window()
    full = build_pack(pack_input("Thorin", log))
    need = section(full, "recent").tokens
    pack = build_pack(pack_input("Thorin", log, config=config(budgets={"recent": need - 3})))
    gone = dropped(pack)
    assert gone[0] == f"turn:{t['sys1'].id}"
    assert set(gone) <= {f"turn:{t['sys1'].id}", f"turn:{t['sys2'].id}"}
    assert section(pack, "recent").tokens <= need - 3


def test_every_window_turn_is_either_in_the_pack_or_in_the_trim_log():
    log, t = mixed_window()
    pack = build_pack(pack_input("Thorin", log, config=config(budgets={"recent": 80})))
    shown = set(refs(pack, "recent"))
    logged = {e.ref for e in pack.trim_log}
    assert {f"turn:{turn.id}" for turn in t.values()} <= shown | logged
    assert shown.isdisjoint(set(dropped(pack)))


def hinge_campaign():
    log = Log()
    hinges = {}
    for r in range(1, 13):
        hinges[r] = log.add(r, "DM", "narrative", f"Turning point {r}.", hinge=True)
        log.add(r, "Thorin", "action", f"Ordinary step {r}.")
    return log, hinges


def test_hinge_turns_older_than_the_window_stay_as_anchors_within_quota_and_ttl():
    log, hinges = hinge_campaign()
    pack = build_pack(pack_input("Thorin", log, config=config(hinge_quota=3, hinge_ttl_rounds=10)))
    anchors = [i.ref for i in section(pack, "recent").items if i.kind == "anchor"]
    assert anchors == [f"turn:{hinges[r].id}" for r in (6, 7, 8)]
    reasons = {e.ref: e.reason for e in pack.trim_log}
    for r in (2, 3, 4, 5):
        assert "quota" in reasons[f"turn:{hinges[r].id}"]
    assert any("TTL" in e.reason for e in pack.trim_log if e.ref == "hinges:expired")
    assert "Ordinary step 8." not in text(pack)  # non-hinges do not outlive the window


def test_a_zero_hinge_quota_keeps_no_anchors():
    log, _ = hinge_campaign()
    pack = build_pack(pack_input("Thorin", log, config=config(hinge_quota=0)))
    assert [i for i in section(pack, "recent").items if i.kind == "anchor"] == []


def test_non_hinge_turns_are_dropped_before_hinge_anchors():
    log, hinges = hinge_campaign()
    pack = build_pack(pack_input("Thorin", log, config=config(budgets={"recent": 90})))
    order = dropped(pack)
    anchor_refs = {f"turn:{hinges[r].id}" for r in (6, 7, 8)}
    first_anchor = min(i for i, ref in enumerate(order) if ref in anchor_refs)
    window_non_hinges = [
        ref
        for ref in order
        if ref not in anchor_refs and ref not in {f"turn:{h.id}" for h in hinges.values()}
    ]
    assert all(order.index(ref) < first_anchor for ref in window_non_hinges)


def lore_campaign():
    log = Log()
    log.add(8, "DM", "narrative", "Thorin lifts the VOID-CHISEL from the altar.")
    entries = (
        lore(1, "void-chisel", "A chisel that cuts shadows.", last_seen_round=1),
        lore(
            2, "Ember-glass", "Glass that keeps a flame alive.", last_seen_round=7, mention_count=2
        ),
        lore(3, "Salt road", "The old smugglers' route.", last_seen_round=7, mention_count=9),
        lore(4, "Grey Court", "A secret society of judges.", last_seen_round=2),
    )
    return log, entries


def test_lore_named_in_the_window_gets_its_full_definition_first():
    log, entries = lore_campaign()
    base = build_pack(pack_input("Thorin", log, lore=entries))
    frozen_budget = section(base, "frozen").tokens - 5  # not everything fits in full
    pack = build_pack(
        pack_input("Thorin", log, lore=entries, config=config(budgets={"frozen": frozen_budget}))
    )
    frozen = section(pack, "frozen").text
    assert "- void-chisel (term): A chisel that cuts shadows." in frozen
    assert "Grey Court" in frozen.split("names only")[1]  # least recent degrades first


def test_lore_named_in_the_input_is_matched_case_insensitively():
    log, entries = lore_campaign()
    tight = config(budgets={"frozen": 140})
    pack = build_pack(
        pack_input("Thorin", log, lore=entries, input_text="Ask about grey court", config=tight)
    )
    assert "- Grey Court (term): A secret society of judges." in section(pack, "frozen").text


def test_unnamed_lore_is_ranked_by_recency_then_mentions():
    log = Log()
    log.add(8, "DM", "narrative", "Quiet night.")
    entries = (
        lore(1, "Alpha", "First.", last_seen_round=3, mention_count=1),
        lore(2, "Beta", "Second.", last_seen_round=7, mention_count=1),
        lore(3, "Gamma", "Third.", last_seen_round=7, mention_count=5),
    )
    pack = build_pack(pack_input("Thorin", log, lore=entries))
    frozen = section(pack, "frozen").text
    assert frozen.index("Gamma") < frozen.index("Beta") < frozen.index("Alpha")


def test_lore_that_does_not_fit_degrades_to_a_names_only_line_and_is_logged():
    log, entries = lore_campaign()
    pack = build_pack(
        pack_input("Thorin", log, lore=entries, config=config(budgets={"frozen": 115}))
    )
    frozen = section(pack, "frozen")
    degraded = [e.ref for e in pack.trim_log if e.action == "degraded" and e.section == "frozen"]
    assert degraded, "the budget was chosen so that some lore cannot be given in full"
    for entry in entries:
        assert entry.term in frozen.text  # never silently dropped
    for ref in degraded:
        assert any(i.kind == "lore_name" and i.ref == ref for i in frozen.items)
    assert frozen.tokens <= 115


def test_hook_and_bios_are_never_cut_even_when_they_overflow_the_frozen_budget():
    log, entries = lore_campaign()
    pack = build_pack(
        pack_input("Thorin", log, lore=entries, config=config(budgets={"frozen": 20}))
    )
    frozen = section(pack, "frozen").text
    assert "The city of Ashfall burns; find who lit the fire." in frozen
    for bio in (
        "The narrator of the Ashfall campaign.",
        "A dwarf smith with a grudge.",
        "An elven scout.",
    ):
        assert bio in frozen
    assert any("never cut" in w for w in pack.warnings)
    for entry in entries:  # no room even for names: each loss is logged
        assert any(e.ref == f"lore:{entry.id}" for e in pack.trim_log)


def test_a_long_transcript_never_squeezes_the_digest():
    log = Log()
    for r in range(1, 5):
        for i in range(6):
            log.add(r, "DM", "narrative", f"Round {r} beat {i}: " + LONG[:300])
    memory = digest("Hinge Index: the duke lied.\nOpen Threads: the crypt.")
    pack = build_pack(
        pack_input("Thorin", log, digest=memory, config=config(budgets={"recent": 300}))
    )
    assert "Open Threads: the crypt." in section(pack, "digest").text
    assert section(pack, "recent").trimmed
    assert not section(pack, "digest").trimmed


def test_unused_budget_is_lent_unless_switched_off():
    log = Log()
    for i in range(30):
        log.add(1, "Thorin", "action", f"Step {i} of a long climb up the tower stairs.")
    tight = {"recent": 120}
    off = build_pack(pack_input("Thorin", log, config=config(budgets=tight)))
    on = build_pack(
        pack_input("Thorin", log, config=config(budgets=tight, lend_unused_budget=True))
    )
    assert section(off, "recent").budget == 120 and section(off, "recent").borrowed == 0
    assert section(on, "recent").budget == 120 and section(on, "recent").borrowed > 0
    assert len(refs(on, "recent")) > len(refs(off, "recent"))
    assert on.total_tokens <= on.budget


# --- retrieval fills its budget as fully as the ranked order allows ----------------------


def _hits(costs: list[int]):
    from context_engine.retrieval import Hit

    # Hit i's line is ``cost`` tokens long; best-ranked first (the order `rank` returns).
    return [
        Hit(" ".join(["word"] * (cost - 1)), f"turn:{i}", "turn", cost, seq=i)
        for i, cost in enumerate(costs)
    ]


def test_retrieval_skips_a_hit_that_does_not_fit_and_keeps_a_lower_ranked_one_that_does():
    from context_engine import retrieval, textops

    hits = _hits([40, 300, 40])
    room = textops.count(retrieval.HEADER) + 1 + 40 + 40 + 30  # the 300-token hit cannot fit
    section, events, _ = retrieval.section("retrieval", room, hits)
    assert [item.ref for item in section.items] == ["turn:0", "turn:2"]
    assert [(e.ref, e.action) for e in events] == [("turn:1", "dropped")]
    assert section.tokens <= room


def test_retrieval_keeps_the_best_ranked_hits_when_not_all_fit():
    from context_engine import retrieval, textops

    hits = _hits([30] * 10)
    room = textops.count(retrieval.HEADER) + 1 + 30 * 4
    section, events, _ = retrieval.section("retrieval", room, hits)
    kept = [item.ref for item in section.items]
    assert kept == [f"turn:{i}" for i in range(len(kept))]  # a prefix of the ranking
    assert len(kept) >= 4  # the estimate's room, and what the exact count leaves
    assert {e.ref for e in events} == {f"turn:{i}" for i in range(len(kept), 10)}
    assert section.tokens <= room


def test_retrieval_spends_what_the_exact_count_leaves_beyond_the_line_estimates():
    from context_engine import retrieval, textops

    lines = [f"[R{i}] Gina (action): I found the lantern near the old mill {i}." for i in range(40)]
    hits = [
        retrieval.Hit(line, f"turn:{i}", "turn", textops.count(line) + 1, seq=i)
        for i, line in enumerate(lines)
    ]
    room = 700
    by_estimate, spent = 0, textops.count(retrieval.HEADER) + 1
    while spent + hits[by_estimate].cost <= room:
        spent += hits[by_estimate].cost
        by_estimate += 1
    section, _, _ = retrieval.section("retrieval", room, hits)
    # Each line's estimate counts its newline on its own, so the exact count of the
    # section runs lower; the room that leaves holds more of the ranked hits.
    assert len(section.items) > by_estimate
    assert section.tokens <= room
    assert [item.ref for item in section.items] == [f"turn:{i}" for i in range(len(section.items))]
