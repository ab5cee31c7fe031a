"""The frozen section is kept between packs: an edit still shows at once, and what one
pack does with its result never reaches the next."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from context_engine import sections as secs
from context_engine import textops
from context_engine.candidates import gather
from tests.context_engine.helpers import Log, config, lore, pack_input

ENTRIES = tuple(lore(i, f"Term{i}", f"A thing of the marsh, number {i}.") for i in range(1, 9))


def frozen(entries=ENTRIES, budget: int = 2500, hook: str = "Ashfall burns."):
    log = Log()
    log.add(1, "DM", "narrative", "The party meets Term3 at the gate.")
    view = gather(pack_input("Thorin", log, lore=entries, hook=hook, config=config()))
    candidates = secs.lore_candidates(view)
    named = secs.named_lore_ids(candidates, ["The party meets Term3 at the gate."])
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


words = st.sampled_from(["Term1", "term2", "Salt-gate", "gate", "the", "Ob", "ob-", "-x", "é"])
texts = st.lists(words, max_size=6).map(" ".join)


terms = st.lists(st.sampled_from(["Term1", "term2", "salt-gate", "gate", "ob", "Salt gate"]))


@settings(max_examples=300, deadline=None)
@given(terms.map(lambda chosen: chosen[:5]), st.lists(texts, max_size=5))
def test_lore_named_in_the_window_is_what_a_search_of_its_joined_texts_finds(terms, window):
    """Looked up text by text (and kept per text), the named lore is exactly what one
    whole-word search of the texts joined by newlines finds, again when asked again."""
    entries = tuple(lore(i + 1, term, "A marsh thing.") for i, term in enumerate(terms))
    log = Log()
    log.add(1, "DM", "narrative", "The party waits.")
    candidates = secs.lore_candidates(
        gather(pack_input("Thorin", log, lore=entries, config=config()))
    )
    joined = "\n".join(window).lower()
    expected = {c.lore.id for c in candidates if textops.mentions(c.lore.term, joined)}
    assert secs.named_lore_ids(candidates, window) == expected
    assert secs.named_lore_ids(candidates, window) == expected
