"""Noninterference of ranked retrieval (SPEC §4, §5.8): a player's pack — the ranked
hits, their neighbours, what lending gives the window — is the same, byte for byte,
whatever turns exist that the player cannot read, however many of them match the words.

Two campaigns are written from one script: one with only what Thorin may read, one with
hidden turns (GM notes, whispers between others, Cassia's monologues) interleaved, full
of the same words. Thorin's packs must render identically.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import Experiment
from campaigns.services.context import pack_for_role
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db

WORDS = ["ember", "lantern", "vault", "harbour", "raven", "salt", "oath", "brass", "dune", "key"]
SPEAKERS = ["DM", "Thorin", "Cassia"]
HIDDEN = [
    {"speaker": "DM", "kind": "gm_note", "visibility": ["DM"]},
    {"speaker": "Cassia", "kind": "whisper", "visibility": ["Cassia", "DM"]},
    {"speaker": "Cassia", "kind": "monologue", "visibility": ["Cassia"]},
]

sentence = st.lists(st.sampled_from(WORDS), min_size=2, max_size=6).map(" ".join)
step = st.tuples(
    st.integers(min_value=1, max_value=14),  # round offset from the previous turn: 0 or 1
    st.sampled_from(SPEAKERS),
    sentence,
    st.lists(st.tuples(st.sampled_from(range(len(HIDDEN))), sentence), max_size=3),
)


def _write(script, *, hidden: bool) -> Experiment:
    experiment = make_experiment(config={"budgets": {"recent": 300, "retrieval": 400}})
    round_ = 1
    for jump, speaker, text, secrets in script:
        round_ += jump > 10  # a new round now and then
        make_turn(experiment, round=round_, speaker=speaker, kind="action", content=text)
        if hidden:
            for which, secret in secrets:
                make_turn(experiment, round=round_, content=f"{secret} oath", **HIDDEN[which])
    Experiment.objects.filter(pk=experiment.pk).update(current_round=round_)
    return experiment


def _text(experiment: Experiment, input_text: str) -> list[str]:
    pack = pack_for_role(
        experiment=experiment, role="Thorin", input_text=input_text, use_cache=False
    )
    return [f"{s.name} {s.budget} {s.tokens}\n{s.text}" for s in pack.sections]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=st.lists(step, min_size=30, max_size=60), question=sentence)
def test_what_a_player_cannot_read_changes_nothing_in_their_pack(script, question):
    plain = _write(script, hidden=False)
    crowded = _write(script, hidden=True)
    assert _text(crowded, question) == _text(plain, question)


def test_the_comparison_sees_retrieval_work():
    """Control: the packs compared above do hold ranked hits from older rounds."""
    script = [(11 if i % 4 == 0 else 0, SPEAKERS[i % 3], f"dune {i} salt", []) for i in range(60)]
    script[2] = (0, "Cassia", "the brass key sleeps in the vault", [])
    experiment = _write(script, hidden=False)
    text = "\n".join(_text(experiment, "where is the brass key"))
    assert "brass key sleeps in the vault" in text.split("## Retrieved memories")[1]


# --- monologues: an agent's own older plans rank; another's never do (SPEC §4, §5.6) ----


def _with_monologues(script, *, plant: str | None) -> Experiment:
    """``script`` (see `step`) as a campaign in which Thorin thought his plan in round 2,
    long before the window; ``plant``: the text of a monologue Cassia thinks in round 3."""
    experiment = make_experiment(config={"budgets": {"recent": 300, "retrieval": 400}})
    make_turn(experiment, round=1, speaker="DM", kind="narrative", content="dune salt raven")
    make_turn(
        experiment,
        round=2,
        speaker="Thorin",
        kind="monologue",
        content="I will slip away to the ember vault when the moon is dark.",
        visibility=["Thorin"],
    )
    if plant is not None:
        make_turn(
            experiment, round=3, speaker="Cassia", kind="monologue", content=plant,
            visibility=["Cassia"],
        )  # fmt: skip
    round_ = 3
    for jump, speaker, text, _ in script:
        round_ += jump > 10
        make_turn(experiment, round=round_, speaker=speaker, kind="action", content=text)
    for later in (round_, round_):  # Thorin's newest two: the monologue section's own
        make_turn(
            experiment, round=later, speaker="Thorin", kind="monologue", content="dune dune",
            visibility=["Thorin"],
        )  # fmt: skip
    Experiment.objects.filter(pk=experiment.pk).update(current_round=round_)
    return experiment


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=st.lists(step, min_size=30, max_size=50), question=sentence)
def test_another_players_monologue_matching_the_input_word_for_word_changes_nothing(
    script, question
):
    """Cassia thinks, word for word, what Thorin asks: his pack is the same byte for byte
    as in the campaign where she never thought it, and holds nothing of it."""
    plant = f"{question} — {question}"
    without = _text(_with_monologues(script, plant=None), question)
    planted = _with_monologues(script, plant=plant)
    assert _text(planted, question) == without
    assert plant not in "\n".join(without)
    # Thorin's own planted plan still ranks, so the comparison holds a monologue hit.
    pack = "\n".join(_text(planted, "where will I slip away to the ember vault"))
    assert "Thorin (private thought): I will slip away to the ember vault" in pack


def test_a_players_own_older_monologue_is_retrieved_as_their_private_thought():
    """Control: the plan Thorin thought in round 2 — older than the two monologues the
    monologue section shows — comes back when he asks for it, labelled as the monologue
    section labels it, once; Cassia's, in the same words, does not."""
    script = [(11 if i % 4 == 0 else 0, SPEAKERS[i % 3], f"dune {i} salt", []) for i in range(60)]
    experiment = _with_monologues(
        script, plant="I will slip away to the ember vault when the moon is dark."
    )
    sections = _text(experiment, "Where do I plan to slip away to?")
    text = "\n".join(sections)
    retrieved = text.split("## Retrieved memories")[1]
    own = "I will slip away to the ember vault when the moon is dark."
    assert f"[R2] Thorin (private thought): {own}" in retrieved
    assert text.count("slip away to the ember vault") == 1  # Cassia's identical one: nowhere
    recent = next(s for s in sections if s.startswith("recent "))
    assert recent.count("Thorin (private thought): dune dune") == 2  # the section's own two
    assert "dune dune" not in retrieved  # shown there, not repeated here
