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
