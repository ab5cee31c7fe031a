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
    """An answer naming each entry by its id (the entry with that term and audience)."""
    terms = [
        {
            "id": LoreEntry.objects.get(term=term, audience_key=audience).pk,
            "term": term,
            "keep": keep,
            "category": category,
            "definition": definition,
        }
        for term, audience, keep, category, definition in items
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
    answer = verdicts(
        ("Westruun", "*", True, "location", "A far city."),
        ("Cheesy Poofs", "*", False, "term", "A snack."),
        ("Duskblade", "|DM|", True, "artifact", "A cursed blade."),
    )
    gemini_standin.script([answer, answer])  # one prompt per audience; each applies its own

    counts = vet_entries(experiment=proposals)

    assert counts == {"vetted": 3, "rejected": 1}
    westruun = LoreEntry.objects.get(term="Westruun", audience_key="*")
    assert (westruun.status, westruun.category, westruun.definition) == (
        "proposed",
        "location",
        "A far city.",
    )
    assert LoreEntry.objects.get(term="Cheesy Poofs").status == "rejected"
    assert LoreEntry.objects.get(term="Duskblade").definition == "A cursed blade."
    assert westruun.revisions.filter(actor="task:vet").exists()
    public, dm_only = gemini_standin.requests
    assert "Westruun is far" in public.prompt
    # The DM's note reaches the model only in the DM-only prompt, never in the public one.
    assert "hides the Duskblade" not in public.prompt
    assert "hides the Duskblade" in dm_only.prompt and "Cheesy" not in dm_only.prompt
    assert vet_entries(experiment=proposals) == {"vetted": 0, "rejected": 0}  # once only
    assert len(gemini_standin.requests) == 2


def test_an_unanswered_proposal_is_asked_once(proposals, settings, gemini_standin):
    use_gemini(settings, gemini_standin)  # the stand-in's default answer names no term

    assert vet_entries(experiment=proposals) == {"vetted": 0, "rejected": 0}
    asked = len(gemini_standin.requests)
    assert vet_entries(experiment=proposals) == {"vetted": 0, "rejected": 0}

    assert asked == 2  # the public and the DM-only audience, once each
    assert len(gemini_standin.requests) == asked
    assert set(LoreEntry.objects.values_list("status", flat=True)) == {"proposed"}


def test_a_failing_model_leaves_the_rules_proposals(proposals, settings, gemini_standin):
    use_gemini(settings, gemini_standin)
    gemini_standin.set_default("500")
    before = list(LoreEntry.objects.values_list("term", "status", "category", "definition"))
    assert vet_entries(experiment=proposals) == {"vetted": 0, "rejected": 0}
    after = list(LoreEntry.objects.values_list("term", "status", "category", "definition"))
    assert after == before
