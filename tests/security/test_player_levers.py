"""Finding 1 (continued): a player pinned text into every agent's pack with ``hinge``; tags
were the same kind of lever (``dead:…`` invalidates lore for everyone, ``thread:…`` opens
threads in every digest). Only the DM side pulls them."""

from __future__ import annotations

import pytest

from campaigns.models import LoreEntry, Turn
from campaigns.services.context import pack_for_role
from campaigns.services.lore import lore_create

pytestmark = pytest.mark.django_db

BODY = {"speaker": "Thorin", "kind": "action", "content": "PINNED-by-thorin"}


def url(experiment) -> str:
    return f"/api/experiments/{experiment.pk}/turns/"


def pack_text(experiment, role: str) -> str:
    pack = pack_for_role(experiment=experiment, role=role)
    return "".join(section.text for section in pack.sections)


def test_a_player_cannot_pin_a_hinge_into_every_pack(api, reveal_campaign, player):
    response = api(player).post(url(reveal_campaign), {**BODY, "hinge": True}, format="json")

    assert response.status_code == 400
    assert "hinge" in response.json()
    assert not Turn.objects.exists()
    assert "PINNED-by-thorin" not in pack_text(reveal_campaign, "DM")


def test_a_player_cannot_tag_a_turn_to_invalidate_lore(api, reveal_campaign, player, owner):
    lore_create(
        experiment=reveal_campaign,
        user=owner,
        term="Lord Vane",
        category="npc",
        definition="Lord of the drowned archive.",
        audience=None,
    )

    response = api(player).post(
        url(reveal_campaign), {**BODY, "tags": ["dead:Lord Vane"]}, format="json"
    )

    assert response.status_code == 400
    assert "tags" in response.json()
    assert not Turn.objects.exists()
    assert LoreEntry.objects.get(term="Lord Vane").invalid_from_round is None
    assert "Lord of the drowned archive" in pack_text(reveal_campaign, "Cassia")


def test_a_plain_false_hinge_and_no_tags_are_fine(api, reveal_campaign, player):
    response = api(player).post(
        url(reveal_campaign), {**BODY, "hinge": False, "tags": []}, format="json"
    )

    assert response.status_code == 201
    assert Turn.objects.get().hinge is False


def test_the_dm_side_still_marks_hinges_and_tags(api, reveal_campaign, owner):
    body = {"speaker": "DM", "kind": "narrative", "content": "HINGE-by-dm", "hinge": True}

    response = api(owner).post(
        url(reveal_campaign), {**body, "tags": ["thread:vane"]}, format="json"
    )

    assert response.status_code == 201
    turn = Turn.objects.get()
    assert turn.hinge is True and turn.tags == ["thread:vane"]
