"""Derived facts (campaigns that plant none): a private fact is only what outsiders do
not read anyway — otherwise every strategy would "leak" a name said in public."""

from __future__ import annotations

from context_engine.arena import derive_facts
from context_engine.types import ParticipantView, TurnView

CAST = (
    ParticipantView(role="DM", kind="dm"),
    ParticipantView(role="Thorin", kind="player", bio="A dwarf from Saltmarch."),
    ParticipantView(
        role="Cassia",
        kind="player",
        secret="You serve the Geometers and will sell the Codex to Idris Vane.",
    ),
)


def turn(seq, content, visibility=None, *, hinge=False, tags=()):
    return TurnView(
        id=seq, seq=seq, round=1, speaker="DM", kind="narrative", content=content,
        visibility=visibility, hinge=hinge, tags=tags,
    )  # fmt: skip


def derived(*turns):
    return {f.id: f for f in derive_facts(turns=turns, lore=(), participants=CAST)}


def test_a_private_hinge_keeps_only_the_terms_no_outsider_reads():
    facts = derived(
        turn(1, "Maelis Orrow greets everyone at the pier."),
        turn(2, "Maelis Orrow hides the Brinewick Seal.", ["DM", "Thorin"], hinge=True),
    )
    assert facts["hinge-2"].answer == ("Brinewick Seal",)


def test_a_private_fact_whose_answers_are_all_public_is_not_derived():
    facts = derived(
        turn(1, "Maelis Orrow greets everyone at the pier."),
        turn(2, "Maelis Orrow waves.", ["DM", "Thorin"], hinge=True),
    )
    assert "hinge-2" not in facts


def test_a_thread_name_in_a_public_tag_is_not_private():
    facts = derived(
        turn(1, "A note.", ["DM"], tags=("thread:codex-binding",)),
        turn(2, "The binding holds.", tags=("thread:codex-binding",)),
    )
    assert "thread-codex-binding" not in facts or facts["thread-codex-binding"].audience is None


def test_a_secret_whose_names_are_public_is_asked_by_its_own_words():
    facts = derived(turn(1, "The Geometers and Idris Vane want the Codex."))
    secret = facts["secret-Cassia"]
    assert secret.audience == ("Cassia",)
    assert secret.answer == ("You serve the Geometers and will",)
    assert secret.answer[0] in CAST[2].secret  # a string a pack can really contain
