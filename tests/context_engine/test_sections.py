"""The frozen section is kept between packs: an edit still shows at once, and what one
pack does with its result never reaches the next."""

from __future__ import annotations

from dataclasses import replace

from context_engine import sections as secs
from context_engine.candidates import gather
from tests.context_engine.helpers import Log, config, lore, pack_input

ENTRIES = tuple(lore(i, f"Term{i}", f"A thing of the marsh, number {i}.") for i in range(1, 9))


def frozen(entries=ENTRIES, budget: int = 2500, hook: str = "Ashfall burns."):
    log = Log()
    log.add(1, "DM", "narrative", "The party meets Term3 at the gate.")
    view = gather(pack_input("Thorin", log, lore=entries, hook=hook, config=config()))
    candidates = secs.lore_candidates(view)
    named = secs.named_lore_ids(candidates, "the party meets term3 at the gate.")
    return secs.frozen_section(view, hook, budget, candidates, named)


def test_an_edited_lore_entry_shows_its_new_definition_in_the_next_pack():
    before = frozen()[0].text
    edited = tuple(
        replace(entry, definition="Burned down in round 2.") if entry.id == 3 else entry
        for entry in ENTRIES
    )
    after = frozen(edited)[0].text
    assert "number 3." in before and "number 3." not in after
    assert "Burned down in round 2." in after


def test_a_smaller_budget_or_another_hook_is_fitted_again():
    wide, narrow = frozen(budget=2500), frozen(budget=60)
    assert wide[1] == [] and narrow[1]  # only the narrow one degrades lore to names
    assert "A thing of the marsh" not in narrow[0].text
    assert "Ashfall burns." not in frozen(hook="The sea rises.")[0].text


def test_a_pack_that_changes_its_event_list_leaves_the_next_packs_alone():
    section, events, warnings, full_ids = frozen(budget=60)
    kept = list(events)
    events.append("a later step's entry")
    warnings.append("a later step's warning")
    again = frozen(budget=60)
    assert again == (section, kept, [], full_ids)
    assert again[1] is not events
