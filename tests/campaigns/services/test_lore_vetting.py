"""Model vetting of World Bible proposals at a checkpoint (issue 10)."""

from __future__ import annotations

import json

import pytest

from campaigns.models import LoreEntry
from campaigns.services.memory import hydrate_experiment
from campaigns.services.memory.vetting import vet_entries
from tests.campaigns.services.memory_support import use_gemini
from tests.factories import make_turn
from tests.standins import Reply

pytestmark = pytest.mark.django_db


def verdicts(*items) -> Reply:
    terms = [
        {"term": term, "keep": keep, "category": category, "definition": definition}
        for term, keep, category, definition in items
    ]
    return Reply(text=json.dumps({"terms": terms}))


@pytest.fixture
def proposals(campaign):
    make_turn(campaign, round=1, content="We ride to Westruun. Westruun is far.")
    make_turn(campaign, round=1, content="Grab the Cheesy Poofs. I want the Cheesy Poofs.")
    make_turn(
        campaign,
        round=1,
        kind="gm_note",
        visibility=["DM"],
        content="Westruun hides the Duskblade. The Duskblade is cursed.",
    )
    hydrate_experiment(experiment=campaign)
    return campaign


def test_offline_vetting_changes_nothing(proposals):
    before = list(LoreEntry.objects.values_list("term", "status", "category", "definition"))
    assert vet_entries(experiment=proposals) == {"vetted": 0, "rejected": 0}
    after = list(LoreEntry.objects.values_list("term", "status", "category", "definition"))
    assert after == before and before


def test_the_model_keeps_corrects_and_rejects_and_sees_only_readable_sentences(
    proposals, settings, gemini_standin
):
    use_gemini(settings, gemini_standin)
    gemini_standin.script(
        [
            verdicts(
                ("Westruun", True, "location", "A far city."),
                ("Cheesy Poofs", False, "term", "A snack."),
                ("Duskblade", True, "artifact", "A cursed blade."),
            )
        ]
    )
    counts = vet_entries(experiment=proposals)
    assert counts == {"vetted": 3, "rejected": 1}
    westruun = LoreEntry.objects.get(term="Westruun", audience_key="*")
    assert (westruun.status, westruun.category, westruun.definition) == (
        "proposed",
        "location",
        "A far city.",
    )
    assert LoreEntry.objects.get(term="Cheesy Poofs").status == "rejected"
    assert westruun.revisions.filter(actor="task:vet").exists()
    (request,) = gemini_standin.requests
    assert "Westruun is far" in request.prompt
    # The DM's note reaches the model only for the DM-only entry, never for a public one.
    assert request.prompt.count("hides the Duskblade") <= 1
    assert vet_entries(experiment=proposals) == {"vetted": 0, "rejected": 0}  # once only


def test_a_failing_model_leaves_the_rules_proposals(proposals, settings, gemini_standin):
    use_gemini(settings, gemini_standin)
    gemini_standin.set_default("500")
    before = list(LoreEntry.objects.values_list("term", "status", "category", "definition"))
    assert vet_entries(experiment=proposals) == {"vetted": 0, "rejected": 0}
    after = list(LoreEntry.objects.values_list("term", "status", "category", "definition"))
    assert after == before
