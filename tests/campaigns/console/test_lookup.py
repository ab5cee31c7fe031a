"""Memory lookups typed into the timeline composer: /search, /lore, /timeline (issue 10).

They answer at once with the snippets pinned for the role's next pack, only what that role
reads, and the inspector shows the pinned items with the reason they are there.
"""

import re

import pytest
from django.urls import reverse

from campaigns.models import RetrievalPin, Turn
from tests.campaigns.console.conftest import ALLOWED, FORBIDDEN, HX, is_fragment

pytestmark = pytest.mark.django_db


def post_url(exp):
    return reverse("console:turn_post", args=[exp.pk])


def lookup(client, exp, text, **extra):
    return client.post(post_url(exp), {"kind": "action", "content": text, **extra}, **HX)


def test_a_player_timeline_shows_only_what_they_read_and_pins_it_for_their_pack(
    as_user, player, exp
):
    turns_before = Turn.objects.filter(experiment=exp).count()
    response = lookup(as_user(player), exp, "/timeline 0..50")
    body = response.content.decode()
    assert response.status_code == 200 and is_fragment(response)
    assert ALLOWED["public"] in body and ALLOWED["thorin_whisper"] in body
    for marker in ("cassia_whisper", "gm_note", "cassia_monologue", "dm_reply_to_cassia"):
        assert FORBIDDEN[marker] not in body
    assert "Pinned for Thorin's next pack" in body
    pin = RetrievalPin.objects.get(experiment=exp)
    assert pin.role == "Thorin" and pin.command == "timeline"
    assert Turn.objects.filter(experiment=exp).count() == turns_before  # not a turn


def test_a_search_for_hidden_text_answers_nothing_and_no_count(as_user, player, exp):
    body = lookup(as_user(player), exp, "/search ZQX gm note trapdoor").content.decode()
    assert "Nothing Thorin can read matches." in body
    assert "ZQX" not in body.replace("/search ZQX gm note trapdoor", "")
    answer = body.split("</h3>", 1)[1].split("</section>", 1)[0]
    assert not re.search(r"\d", answer)  # no count of what Thorin may not read


def test_a_player_cannot_look_up_as_another_role(as_user, player, exp):
    lookup(as_user(player), exp, "/timeline 0..50", as_role="DM")
    assert list(RetrievalPin.objects.values_list("role", flat=True)) == ["Thorin"]


def test_the_owner_looks_up_as_the_role_viewed(as_user, owner, exp):
    client = as_user(owner)
    page = client.get(reverse("console:campaign", args=[exp.pk]) + "?as=Cassia").content.decode()
    assert "Memory lookup as Cassia" in page
    body = lookup(client, exp, "/timeline 0..50", as_role="Cassia").content.decode()
    assert FORBIDDEN["cassia_whisper"] in body and FORBIDDEN["gm_note"] not in body
    assert ALLOWED["thorin_whisper"] not in body
    assert RetrievalPin.objects.get().role == "Cassia"


def test_the_owner_without_view_as_looks_up_for_the_role_they_post_as(as_user, owner, exp):
    body = lookup(as_user(owner), exp, "/timeline 0..50").content.decode()
    assert FORBIDDEN["gm_note"] in body  # the DM reads its own notes
    assert RetrievalPin.objects.get().role == "DM"


def test_the_owner_looking_up_as_an_unknown_role_is_404(as_user, owner, exp):
    assert lookup(as_user(owner), exp, "/lore x", as_role="Nobody").status_code == 404
    assert not RetrievalPin.objects.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/timeline a..b", "Use FROM..TO with round numbers"),
        ("/timeline 5..2", "ends (2) before it starts (5)"),
        ("/search", "This command needs a query."),
        ("/dance now", "Unknown command /dance"),
    ],
)
def test_bad_lookups_name_the_text_field_and_store_nothing(as_user, player, exp, text, message):
    response = lookup(as_user(player), exp, text)
    body = response.content.decode()
    assert response.status_code == 422
    assert message in body and "has-error" in body
    assert not RetrievalPin.objects.exists()


def test_the_inspector_shows_pinned_items_with_their_reason(as_user, player, exp):
    client = as_user(player)
    lookup(client, exp, "/timeline 0..50")
    body = client.get(reverse("console:context", args=[exp.pk, "Thorin"])).content.decode()
    assert "pinned by /timeline “0..50”" in body
    assert FORBIDDEN["gm_note"] not in body


def test_the_inspector_warns_when_pins_overflow_the_retrieval_budget(as_user, player, exp):
    exp.config = {**(exp.config or {}), "budgets": {"retrieval": 20}}
    exp.save(update_fields=["config"])
    client = as_user(player)
    inspector = reverse("console:context", args=[exp.pk, "Thorin"])
    assert "over the retrieval budget" not in client.get(inspector).content.decode()
    lookup(client, exp, "/timeline 0..50")
    body = client.get(inspector).content.decode()
    assert "over the retrieval budget of 20" in body
