"""Milestones trigger an immediate digest: new NPC, item, location change, decision."""

from __future__ import annotations

import pytest

from context_engine.memory import detect_milestones
from tests.context_engine.memory.turns import Story


def test_a_quiet_round_has_no_milestone():
    story = Story()
    story.add(1, "DM", "Rain falls on the camp.")
    story.add(1, "Thorin", "I sharpen my axe and wait.", kind="action")
    assert detect_milestones(story.turns, known_npcs=set()) == []


def test_only_npcs_not_known_before_are_new_and_each_is_reported_once():
    story = Story()
    story.add(1, "DM", "Vane and Mother Ash arrive.", tags=("npc:Vane", "npc:Mother Ash"))
    story.add(1, "DM", "Mother Ash coughs.", tags=("npc:mother ash",))
    assert detect_milestones(story.turns, known_npcs={"VANE"}) == ["new_npc:Mother Ash"]


@pytest.mark.parametrize(
    ("content", "kind", "tags", "expected"),
    [
        ("Thorin picks up the void-chisel.", "action", (), "item_acquired:R2 Thorin"),
        ("You are handed a sealed letter.", "narrative", (), "item_acquired:R2 Thorin"),
        ("A coin.", "narrative", ("item:coin",), "item_acquired:R2 Thorin"),
        ("We arrive at the Undermarket.", "action", (), "location_change:R2 Thorin"),
        ("The party descends into the crypt.", "narrative", (), "location_change:R2 Thorin"),
        ("Fog.", "narrative", ("location:Undermarket",), "location_change:Undermarket"),
        ("I choose the left door.", "action", (), "decision_made:R2 Thorin"),
        ("We agree to the pact.", "whisper", (), "decision_made:R2 Thorin"),
    ],
)
def test_each_rule_fires_on_its_phrase_or_tag(content, kind, tags, expected):
    story = Story()
    story.add(2, "Thorin", content, kind=kind, tags=tags)
    assert detect_milestones(story.turns, known_npcs=set()) == [expected]


def test_a_hinge_is_a_decision_and_the_dm_narrating_choices_is_not():
    story = Story()
    story.add(3, "DM", "Will you choose the left door or the right?", kind="choice")
    story.add(3, "Cassia", "Left.", kind="action", hinge=True)
    assert detect_milestones(story.turns, known_npcs=set()) == ["decision_made:R3 Cassia"]


def test_monologues_and_gm_notes_do_not_trigger_text_rules():
    story = Story()
    story.add(1, "Thorin", "I decide to steal the key.", kind="monologue")
    story.add(1, "DM", "They will arrive at the crypt.", kind="gm_note")
    assert detect_milestones(story.turns, known_npcs=set()) == []


def test_milestones_come_in_story_order():
    story = Story()
    story.add(1, "Thorin", "We arrive at the gate.", kind="action")
    story.add(1, "DM", "Vane greets you.", tags=("npc:Vane",))
    shuffled = list(reversed(story.turns))
    assert detect_milestones(shuffled, known_npcs=set()) == [
        "location_change:R1 Thorin",
        "new_npc:Vane",
    ]
