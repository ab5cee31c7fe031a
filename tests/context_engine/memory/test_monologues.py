"""Older monologues condense into the agent's own strategic summary."""

from __future__ import annotations

import pytest

from context_engine.llm import OfflineClient, client_for
from context_engine.memory import condense_monologues
from context_engine.tokens import count
from tests.context_engine.memory.turns import Story


def thoughts(speaker: str = "Thorin", n: int = 3) -> Story:
    story = Story()
    for r in range(1, n + 1):
        story.add(
            r,
            speaker,
            f"Plan {r}: I must keep the void-chisel from Vane. He lied in round {r}.",
            kind="monologue",
            visibility=(speaker,),
        )
    return story


def test_offline_summary_keeps_each_monologues_gist_in_order():
    summary = condense_monologues(thoughts().turns, client=OfflineClient())
    assert summary.splitlines() == [
        "Strategic summary of Thorin's earlier thinking:",
        "- R1: Plan 1: I must keep the void-chisel from Vane.",
        "- R2: Plan 2: I must keep the void-chisel from Vane.",
        "- R3: Plan 3: I must keep the void-chisel from Vane.",
    ]
    assert summary == condense_monologues(thoughts().turns)


def test_the_cap_keeps_the_newest_thinking():
    summary = condense_monologues(thoughts(n=30).turns, max_tokens=60)
    assert count(summary) <= 60
    assert "- R30:" in summary and "- R1:" not in summary


def test_other_turn_kinds_are_ignored_and_none_gives_an_empty_summary():
    story = thoughts(n=1)
    story.add(1, "DM", "SECRET-NOTE the DM plans an ambush.", kind="gm_note", visibility=("DM",))
    assert "SECRET-NOTE" not in condense_monologues(story.turns)
    assert condense_monologues([t for t in story.turns if t.kind != "monologue"]) == ""


def test_mixing_two_agents_monologues_is_refused():
    turns = thoughts("Thorin", 1).turns + thoughts("Cassia", 1).turns
    with pytest.raises(ValueError, match="several speakers"):
        condense_monologues(turns)


def test_a_model_summary_is_used_and_a_failing_model_falls_back(openai_standin, openai_settings):
    client = client_for("openai:llama3.1", openai_settings)
    turns = thoughts().turns
    assert "stand-in" in condense_monologues(turns, client=client)
    assert "Monologues of Thorin" in openai_standin.requests[0].prompt
    openai_standin.script(["500", "500"])
    fallback = condense_monologues(turns, client=client, sleep=lambda s: None)
    assert fallback == condense_monologues(turns)
