"""Finding 3 of issue 23: revealing an edited GM note showed its pre-edit text ("Earlier
text … by demo") to the new audience — the notes page attached every revision of a note
and ignored the revision's own visibility. A revision is readable by exactly who could
read the turn while that text was current; a reveal shows the current text only."""

from __future__ import annotations

import pytest
from django.test import Client

from campaigns.models import Turn
from campaigns.reads import numbering, selectors
from tests.factories import make_turn, make_user

pytestmark = pytest.mark.django_db

DRAFT = "ZQX-draft-the-duke-is-the-poisoner"
CURRENT = "VIS-the-duke-hides-in-the-chapel"
LATER = "VIS-the-duke-fled-at-dawn"
HX = {"HTTP_HX_REQUEST": "true"}


def browser(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def notes_page(user, experiment, **extra) -> str:
    response = browser(user).get(f"/campaigns/{experiment.pk}/notes/", **extra)
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def co_dm(campaign):
    user = make_user("co_dm")
    campaign.participants.filter(role="DM").update(user=user)
    return user


@pytest.fixture
def edited_then_revealed(api, campaign, owner, player, other_player, co_dm):
    """The owner writes a DM-only note, corrects it in the console, then reveals it to
    Thorin through the API — the order the review used."""
    note = make_turn(campaign, kind="gm_note", content=DRAFT, visibility=["DM"])
    edited = browser(owner).post(f"/campaigns/{campaign.pk}/notes/{note.pk}/", {"content": CURRENT})
    assert edited.status_code == 302
    revealed = api(owner).post(
        f"/api/experiments/{campaign.pk}/turns/{note.pk}/reveal/",
        {"visibility": ["DM", "Thorin"]},
        format="json",
    )
    assert revealed.status_code == 201, revealed.json()
    return note


def test_a_revealed_note_shows_the_new_audience_its_current_text_only(
    edited_then_revealed, campaign, player
):
    for extra in ({}, HX):
        page = notes_page(player, campaign, **extra)

        assert CURRENT in page
        assert DRAFT not in page
        assert "Earlier text" not in page


def test_the_owner_viewing_as_the_new_audience_sees_no_earlier_text(
    edited_then_revealed, campaign, owner
):
    page = notes_page(owner, campaign, data={"as": "Thorin"})

    assert CURRENT in page and DRAFT not in page


def test_those_who_read_the_old_text_keep_its_history(edited_then_revealed, campaign, owner, co_dm):
    for reader in (owner, co_dm):
        page = notes_page(reader, campaign)
        assert CURRENT in page and DRAFT in page and "Earlier text (1)" in page
    # The co-DM reads the note under its place in their own readable stream (issue 23,
    # finding 5), not its database id.
    viewer = selectors.viewer_for_user(experiment=campaign, user=co_dm)
    (shown,) = numbering.shown_turns(
        experiment=campaign, viewer=viewer, turns=[edited_then_revealed]
    )
    single = browser(co_dm).get(f"/campaigns/{campaign.pk}/notes/{shown.shown_id}/", **HX)
    assert DRAFT in single.content.decode()


def test_an_edit_after_the_reveal_keeps_what_the_new_audience_already_read(
    edited_then_revealed, campaign, owner, player, other_player
):
    note = edited_then_revealed
    edited = browser(owner).post(f"/campaigns/{campaign.pk}/notes/{note.pk}/", {"content": LATER})
    assert edited.status_code == 302

    page = notes_page(player, campaign)

    # Thorin read CURRENT while it was the note's text: it stays in his history; the
    # draft from before the reveal never reaches him.
    assert LATER in page and CURRENT in page and DRAFT not in page
    assert "Earlier text (1)" in page
    # Cassia never read the note at all.
    cassia = notes_page(other_player, campaign)
    assert LATER not in cassia and CURRENT not in cassia and DRAFT not in cassia
    assert Turn.objects.get(pk=note.pk).content == LATER
