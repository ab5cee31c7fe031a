"""System notes are about the table, never the story (issue 26 ask 5): the relay's failure
notes once became World Bible terms ("ollama", "PermanentLLMError")."""

from __future__ import annotations

import pytest

from campaigns.models import LoreEntry
from campaigns.services.memory.hydrate import hydrate_experiment
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

FAILURE = (
    "Relay: Thorin's step (act, model ollama:Llama3) failed and was skipped this round: "
    "PermanentLLMError: ollama:Llama3 HTTP 404: model 'Llama3' not found"
)


def test_relay_failure_notes_never_become_lore(campaign):
    for round_ in (1, 2, 3):
        make_turn(campaign, round=round_, kind="system", content=FAILURE, visibility=["DM"])
        make_turn(campaign, round=round_, content="Captain Idris Vane boards the Saltwind.")

    hydrate_experiment(experiment=campaign)

    terms = {term.lower() for term in LoreEntry.objects.values_list("term", flat=True)}
    assert "idris vane" in terms or "saltwind" in terms, "the story's names are lore"
    assert not {t for t in terms if "llama" in t or "llmerror" in t or "relay" in t}
