"""The DM's side of the World Bible: create, correct, confirm, reject, lock, invalidate."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from campaigns.models import LoreEntry, LoreRevision
from campaigns.services.context import pack_for_role
from campaigns.services.lore import lore_create, lore_update
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry(campaign, owner):
    make_turn(campaign, round=3, content="The Brass Choir sings at dusk.")
    return lore_create(
        experiment=campaign,
        user=owner,
        term="the Brass Choir",
        category="faction",
        definition="Singers who keep the harbour bells.",
        audience=None,
    )


def pack_text(campaign, role):
    return "\n".join(s.text for s in pack_for_role(experiment=campaign, role=role).sections)


def test_a_dm_made_entry_is_confirmed_and_its_creation_is_a_revision(campaign, owner, entry):
    assert (entry.origin, entry.status, entry.key) == ("dm", "confirmed", "brass choir")
    assert (entry.first_seen_round, entry.last_seen_round) == (3, 3)
    (revision,) = entry.revisions.all()
    assert (revision.actor, revision.user) == ("user:owner", owner)
    assert revision.changes["definition"] == [None, "Singers who keep the harbour bells."]


def test_a_second_entry_for_the_same_term_and_audience_is_refused_naming_the_term(
    campaign, owner, entry
):
    with pytest.raises(ValidationError) as error:
        lore_create(
            experiment=campaign,
            user=owner,
            term="Brass Choirs",
            category="faction",
            definition="Again.",
            audience=None,
        )
    assert "term" in error.value.message_dict
    other = lore_create(
        experiment=campaign,
        user=owner,
        term="Brass Choir",
        category="faction",
        definition="What the DM knows of them.",
        audience=["DM"],
    )
    assert other.audience == ["DM"] and LoreEntry.objects.count() == 2


@pytest.mark.parametrize(
    ("fields", "bad"),
    [
        ({"term": "  "}, "term"),
        ({"term": "x" * 201}, "term"),
        ({"category": "weather"}, "category"),
        ({"definition": 7}, "definition"),
        ({"audience": []}, "audience"),
        ({"audience": ["Nobody"]}, "audience"),
    ],
)
def test_bad_fields_are_a_validation_error_naming_the_field_and_store_nothing(
    campaign, owner, fields, bad
):
    data = {"term": "Gullwarden", "category": "npc", "definition": "A guard.", "audience": None}
    data.update(fields)
    with pytest.raises(ValidationError) as error:
        lore_create(experiment=campaign, user=owner, **data)
    assert bad in error.value.message_dict
    assert not LoreEntry.objects.exists() and not LoreRevision.objects.exists()


def test_each_correction_is_a_revision_with_old_and_new_values(owner, entry):
    updated = lore_update(entry=entry, user=owner, definition="Bell-ringers.", locked=True)
    assert (updated.definition, updated.locked) == ("Bell-ringers.", True)
    revision = entry.revisions.order_by("-id").first()
    assert revision.changes == {
        "definition": ["Singers who keep the harbour bells.", "Bell-ringers."],
        "locked": [False, True],
    }
    # The same values again change nothing and write nothing.
    lore_update(entry=updated, user=owner, definition="Bell-ringers.", locked=True)
    assert entry.revisions.count() == 2


def test_status_and_story_time_validity_are_checked(owner, entry):
    with pytest.raises(ValidationError) as error:
        lore_update(entry=entry, user=owner, status="maybe")
    assert "status" in error.value.message_dict
    with pytest.raises(ValidationError) as error:
        lore_update(entry=entry, user=owner, invalid_from_round=-1)
    assert "invalid_from_round" in error.value.message_dict
    ended = lore_update(entry=entry, user=owner, invalid_from_round=5)
    assert ended.invalid_from_round == 5 and LoreEntry.objects.filter(pk=entry.pk).exists()
    assert lore_update(entry=ended, user=owner, invalid_from_round=None).invalid_from_round is None


def test_a_dm_correction_is_in_the_very_next_pack(campaign, owner, entry):
    assert "Singers who keep the harbour bells." in pack_text(campaign, "Thorin")
    lore_update(entry=entry, user=owner, definition="Smugglers who ring false alarms.")
    text = pack_text(campaign, "Thorin")
    assert "Smugglers who ring false alarms." in text
    assert "Singers who keep the harbour bells." not in text


def test_a_rejected_entry_leaves_the_packs(campaign, owner, entry):
    assert "harbour bells" in pack_text(campaign, "Cassia")
    lore_update(entry=entry, user=owner, status="rejected")
    for role in ("Thorin", "Cassia", "DM"):
        assert "harbour bells" not in pack_text(campaign, role)
