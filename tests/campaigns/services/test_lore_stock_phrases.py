"""The hydrator on an agent campaign (issue 22, ask 6): stock phrases are not lore, names
said once in narration are, and an entry's audience still follows its source turns."""

from __future__ import annotations

import pytest

from campaigns.models import LoreEntry, VocabularyStat
from campaigns.reads.selectors import lore_visible_to, viewer_for_role
from campaigns.services.memory import hydrate_turn
from tests.context_engine.memory.agent_campaign import COINED, NAMED_ONCE, PLAYERS, STOCK, TURNS
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def table(owner):
    return make_experiment(owner=owner, roles=("DM", *PLAYERS))


def play(table, turns) -> list:
    """Store and hydrate each turn as the relay does, one after another."""
    made = []
    for round_, speaker, text in turns:
        kind = "narrative" if speaker == "DM" else "action"
        made.append(make_turn(table, round=round_, speaker=speaker, kind=kind, content=text))
        hydrate_turn(turn=made[-1])
    return made


def lore_keys(table, role: str) -> set[str]:
    viewer = viewer_for_role(experiment=table, role=role)
    return set(lore_visible_to(experiment=table, viewer=viewer).values_list("key", flat=True))


def test_an_agent_campaign_proposes_its_names_and_none_of_its_stock_phrases(table):
    play(table, TURNS)
    entries = LoreEntry.objects.filter(experiment=table)
    keys = set(entries.values_list("key", flat=True))
    assert not [key for key in keys if any(stock in key for stock in STOCK)]
    assert [name for name in NAMED_ONCE if not any(k.endswith(name) for k in keys)] == []
    assert set(COINED) <= keys
    assert {(e.status, e.audience_key) for e in entries} == {("proposed", "*")}


def test_a_name_said_once_in_a_gm_note_reaches_only_the_dm(table):
    note = make_turn(
        table,
        round=1,
        kind="gm_note",
        visibility=["DM"],
        content="Truth: Lady Corisande hired the Greycloaks to steal her own ledger.",
    )
    hydrate_turn(turn=note)
    (entry,) = LoreEntry.objects.filter(key="lady corisande")
    assert (entry.audience, list(entry.source_turns.all())) == (["DM"], [note])
    assert "lady corisande" in lore_keys(table, "DM")
    assert not lore_keys(table, "Ilse") & {"lady corisande", "greycloak"}


def test_a_stock_line_stays_one_use_across_separate_hydrations(table):
    line = "Garrick rubs the cowrie shell at his throat for luck."
    play(table, [(r, "Garrick", line) for r in (1, 2, 3)])
    assert not LoreEntry.objects.filter(key="cowrie shell").exists()
    (stat,) = VocabularyStat.objects.filter(experiment=table, key="cowrie shell")
    assert (stat.turns, len(stat.contexts)) == (3, 1)
    play(table, [(4, "Ilse", "Ilse asks Garrick where he found the cowrie shell.")])
    (entry,) = LoreEntry.objects.filter(key="cowrie shell")
    assert entry.audience is None and entry.mention_count == 4


def test_a_mark_in_a_gm_note_never_makes_a_public_phrase_lore(table):
    note = make_turn(
        table,
        round=1,
        kind="gm_note",
        visibility=["DM"],
        content="Thorin's gear includes what the divers call a brass lung.",
    )
    hydrate_turn(turn=note)
    lines = [
        (2, "Ilse", "Ilse polishes the brass lung."),
        (3, "DM", "Rust spots the brass lung by morning."),
        (4, "Garrick", "Garrick asks who still wears a brass lung these days."),
    ]
    play(table, lines)
    assert not LoreEntry.objects.filter(key="brass lung", audience_key="*").exists()
    assert "brass lung" not in lore_keys(table, "Ilse")
    # Marked in public instead, the same uses make it lore for everyone.
    play(table, [(5, "DM", "The brass lung wheezes as Ilse straps it on.")])
    assert "brass lung" in lore_keys(table, "Ilse")
