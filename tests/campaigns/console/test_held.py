"""`/campaigns/<id>/held/`: the output guard's review page and its three actions."""

from __future__ import annotations

import pytest
from django.test import Client

from campaigns.models import OutputHold, Turn
from campaigns.services.holds import turn_hold
from campaigns.services.turns import turn_create
from tests.factories import make_user

pytestmark = pytest.mark.django_db

NOTE = "The abbot keeps the forged charter inside the hollow statue of the river saint."


@pytest.fixture
def held(campaign):
    turn_create(experiment=campaign, round=0, speaker="DM", kind="gm_note", content=NOTE)
    quote = {"key": "turn:1", "label": "GM note by DM", "words": 13, "start": 6, "end": 82,
             "source": NOTE, "source_start": 0, "source_end": len(NOTE) - 1,
             "source_clipped": [False, False], "audience": ["DM"]}  # fmt: skip
    return turn_hold(
        experiment=campaign,
        review=("DM",),
        quotes=[quote],
        round=1,
        speaker="DM",
        kind="narrative",
        content=f"Says: {NOTE}",
        visibility=None,
    )


def url(campaign, *parts) -> str:
    return "/".join([f"/campaigns/{campaign.pk}/held", *map(str, parts)]) + "/"


def client(user) -> Client:
    browser = Client()
    if user is not None:
        browser.force_login(user)
    return browser


def test_the_owner_sees_the_held_turn_with_its_quote_marked(campaign, owner, held):
    page = client(owner).get(url(campaign)).content.decode()
    assert f'id="held-{held.pk}"' in page
    assert '<mark class="leak">' in page and "GM note by DM" in page
    fragment = client(owner).get(url(campaign), HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="held">') and "<html" not in fragment


def test_a_user_seated_as_the_dm_reviews_too(campaign, held):
    seated = make_user("seated_dm")
    campaign.participants.filter(role="DM").update(user=seated)
    assert f'id="held-{held.pk}"' in client(seated).get(url(campaign)).content.decode()


def test_a_seated_dm_knows_a_held_turn_by_its_position_not_by_hidden_turns(campaign, held):
    """A monologue the DM seat cannot read must not move the number it is shown."""
    seated = make_user("seated_dm")
    campaign.participants.filter(role="DM").update(user=seated)
    held_seq = held.seq
    turn_create(experiment=campaign, round=0, speaker="Cassia", kind="monologue", content="Hm.")
    Turn.objects.filter(pk=held.pk).update(seq=held_seq + 5)  # hidden turns came before it
    page = client(seated).get(url(campaign)).content.decode()
    assert f'<span class="seq">#{held_seq + 5}</span>' not in page
    assert '<span class="seq">#2</span>' in page  # the GM note, then this one
    published = client(seated).post(
        url(campaign, held.pk, "publish"), {"content": "Says nothing."}, HTTP_HX_REQUEST="true"
    )
    assert "#2 published." in published.content.decode()


@pytest.mark.parametrize("who", ["anonymous", "stranger", "player"])
def test_no_one_else_reaches_the_review(campaign, stranger, player, held, who):
    user = {"anonymous": None, "stranger": stranger, "player": player}[who]
    response = client(user).get(url(campaign))
    assert response.status_code == {"anonymous": 302, "stranger": 404, "player": 403}[who]
    posted = client(user).post(url(campaign, held.pk, "publish"), {"content": "x"})
    assert posted.status_code in (302, 403, 404)
    held.refresh_from_db()
    assert held.held_at is not None and held.content == f"Says: {NOTE}"


def test_publish_with_an_edit_gives_the_turn_its_audience(campaign, owner, held):
    response = client(owner).post(url(campaign, held.pk, "publish"), {"content": "Says: hush."})
    assert response.status_code == 302
    held.refresh_from_db()
    assert (held.held_at, held.visibility, held.content) == (None, None, "Says: hush.")
    assert OutputHold.objects.get(turn=held).status == "published"


def test_an_edit_keeps_it_held_and_a_blank_edit_names_the_field(campaign, owner, held):
    browser = client(owner)
    bad = browser.post(url(campaign, held.pk, "edit"), {"content": ""}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 422 and "This field is required" in bad.content.decode()
    ok = browser.post(url(campaign, held.pk, "edit"), {"content": "Says: later."})
    assert ok.status_code == 302
    held.refresh_from_db()
    assert held.content == "Says: later." and held.held_at is not None


def test_discard_removes_the_turn_and_keeps_the_text(campaign, owner, held):
    response = client(owner).post(url(campaign, held.pk, "discard"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "discarded" in response.content.decode()
    assert not Turn.objects.filter(pk=held.pk).exists()
    assert OutputHold.objects.get(seq=held.seq).original == f"Says: {NOTE}"


def test_edges_wrong_method_unknown_id_and_csrf(campaign, owner, held):
    browser = client(owner)
    assert browser.get(url(campaign, held.pk, "publish")).status_code == 405
    assert browser.post(url(campaign, 99999, "discard")).status_code == 404
    assert browser.post(url(campaign, "junk", "discard")).status_code == 404
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(owner)
    assert guarded.post(url(campaign, held.pk, "discard")).status_code == 403
    assert Turn.objects.filter(pk=held.pk, held_at__isnull=False).exists()
