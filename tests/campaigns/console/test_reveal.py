"""The timeline's "Reveal" action: owners widen a turn's audience from the console."""

import pytest
from django.urls import reverse

from campaigns.models import Turn, VisibilityChange
from tests.campaigns.console.conftest import FORBIDDEN, HX, is_fragment

pytestmark = pytest.mark.django_db


def reveal_url(exp, turn):
    return reverse("console:turn_reveal", args=[exp.pk, turn.pk])


def gm_note(exp):
    return Turn.objects.get(experiment=exp, content=FORBIDDEN["gm_note"])


def test_the_owner_sees_a_reveal_action_on_private_turns_and_players_do_not(
    as_user, owner, player, exp
):
    page = reverse("console:campaign", args=[exp.pk])
    assert "Reveal…" in as_user(owner).get(page).content.decode()
    assert "Reveal…" not in as_user(player).get(page).content.decode()


def test_the_owner_reveals_a_gm_note_to_thorin(as_user, owner, player, exp):
    note = gm_note(exp)
    response = as_user(owner).post(reveal_url(exp, note), {"add": ["Thorin"]}, **HX)
    assert response.status_code == 200 and is_fragment(response)
    assert (
        response["HX-Trigger"].startswith("turns-changed")
        or "turns-changed" in response["HX-Trigger"]
    )
    assert Turn.objects.get(pk=note.pk).visibility == ["DM", "Thorin"]
    assert VisibilityChange.objects.get().turn_id == note.pk
    page = as_user(player).get(reverse("console:campaign", args=[exp.pk])).content.decode()
    assert FORBIDDEN["gm_note"] in page


def test_a_reveal_with_nothing_ticked_names_the_field_and_stores_nothing(as_user, owner, exp):
    note = gm_note(exp)
    response = as_user(owner).post(reveal_url(exp, note), {}, **HX)
    assert response.status_code == 422
    assert "Tick at least one role, or Everyone." in response.content.decode()
    assert not VisibilityChange.objects.exists()


@pytest.mark.parametrize(("persona", "status"), [("player", 403), ("stranger", 404)])
def test_others_cannot_reveal(as_user, personas, exp, persona, status):
    response = as_user(personas[persona]).post(reveal_url(exp, gm_note(exp)), {"everyone": "on"})
    assert response.status_code == status
    assert not VisibilityChange.objects.exists()


def test_a_missing_turn_is_404_and_get_is_405(as_user, owner, exp):
    client = as_user(owner)
    assert (
        client.post(
            reverse("console:turn_reveal", args=[exp.pk, 999999]), {"everyone": "on"}
        ).status_code
        == 404
    )
    assert client.get(reveal_url(exp, gm_note(exp))).status_code == 405
