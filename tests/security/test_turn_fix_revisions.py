"""Attacker-side: Thorin's player watches everything they can reach while the DM side
fixes turns Thorin does not read (Cassia's whisper to the DM, a GM note). Nothing they
read changes — not a text, not a count, not a number — and no earlier text of those
turns reaches them; edits to what they do read show with their own counts only."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from campaigns.models import TurnRevision
from campaigns.services.turn_fixes import turn_edit
from tests.campaigns.api.conftest import client_for
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

HIDDEN_OLD = "Cassia counts the Abbot's coins"
HIDDEN_NEW = "Cassia hides the Abbot's ring"
NOTE_OLD = "The bell tower is hollow"
PUBLIC_OLD = "The tide drops at dusk."


@pytest.fixture
def log(campaign, player):
    public = make_turn(campaign, content=PUBLIC_OLD)
    whisper = make_turn(
        campaign, speaker="Cassia", kind="whisper", content=HIDDEN_OLD, visibility=["Cassia", "DM"]
    )
    note = make_turn(campaign, kind="gm_note", content=NOTE_OLD, visibility=["DM"])
    after = make_turn(campaign, speaker="Thorin", kind="action", content="Thorin waits.")
    return {"public": public, "whisper": whisper, "note": note, "after": after}


def _scrub(html: str) -> str:
    """CSRF tokens are masked afresh for every response: not what the page says."""
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)
    return re.sub(r'"X-CSRFToken": "[^"]+"', "", html)


def what_thorin_sees(campaign, player) -> dict:
    api = client_for(player)
    web = Client()
    web.force_login(player)
    return {
        "turns": api.get(f"/api/experiments/{campaign.pk}/turns/").json(),
        # Each turn he reads, one by one, with the earlier texts he reads.
        "details": [
            api.get(f"/api/experiments/{campaign.pk}/turns/{n}/").json() for n in (1, 2, 3)
        ],
        "timeline": _scrub(
            web.get(f"/campaigns/{campaign.pk}/", HTTP_HX_REQUEST="true").content.decode()
        ),
        "status": _scrub(
            web.get(
                f"/campaigns/{campaign.pk}/?part=round_status", HTTP_HX_REQUEST="true"
            ).content.decode()
        ),
        "notes": _scrub(web.get(f"/campaigns/{campaign.pk}/notes/").content.decode()),
    }


def test_edits_to_turns_thorin_cannot_read_change_nothing_he_reads(campaign, owner, player, log):
    before = what_thorin_sees(campaign, player)
    turn_edit(turn=log["whisper"], user=owner, content=HIDDEN_NEW)
    turn_edit(turn=log["whisper"], user=owner, content=HIDDEN_NEW + ", twice")
    turn_edit(turn=log["note"], user=owner, content="The bell tower hides a stair.")
    assert TurnRevision.objects.count() == 3
    after = what_thorin_sees(campaign, player)
    assert after == before
    text = str(after)
    for secret in (HIDDEN_OLD, HIDDEN_NEW, NOTE_OLD, "bell tower", "edited"):
        assert secret not in text


def test_thorin_s_own_count_of_earlier_texts_ignores_hidden_edits(campaign, owner, player, log):
    turn_edit(turn=log["whisper"], user=owner, content=HIDDEN_NEW)
    turn_edit(turn=log["note"], user=owner, content="The bell tower hides a stair.")
    turn_edit(turn=log["public"], user=owner, content="The tide drops at noon.")
    seen = what_thorin_sees(campaign, player)
    assert "edited 1×" in seen["timeline"] and "Earlier text (1)" in seen["timeline"]
    assert PUBLIC_OLD in seen["timeline"]  # the earlier text he did read
    for secret in (HIDDEN_OLD, HIDDEN_NEW, NOTE_OLD, "bell tower"):
        assert secret not in str(seen)
    # His positions still count only what he reads: the public turn is #1, his action #2.
    assert [t["id"] for t in seen["turns"]["results"]] == [1, 2]
    public, action, none = seen["details"]
    assert [r["old_content"] for r in public["revisions"]] == [PUBLIC_OLD]
    assert action["revisions"] == []
    assert none == {"detail": "Turn not found."}


def test_probing_hidden_turns_answers_like_nothing_is_there(campaign, owner, player, log):
    """Whether a hidden turn was edited, regenerated or never existed, the probe's answer
    is the same 404 with the same body."""
    turn_edit(turn=log["whisper"], user=owner, content=HIDDEN_NEW)
    api = client_for(player)
    web = Client()
    web.force_login(player)
    answers = set()
    # Thorin's own positions are 1 (public) and 2 (his action): every other number is a
    # turn he does not read or none at all.
    probes = {log["whisper"].pk, log["note"].pk, 3, 4, 999} - {1, 2}
    for tid in sorted(probes):
        for tail in ("", "edit/"):
            response = web.get(f"/campaigns/{campaign.pk}/turns/{tid}/{tail}")
            answers.add(("web", response.status_code))
        response = api.patch(
            f"/api/experiments/{campaign.pk}/turns/{tid}/", {"content": "x"}, format="json"
        )
        answers.add(("api", response.status_code, response.content))
        response = api.get(f"/api/experiments/{campaign.pk}/turns/{tid}/")
        answers.add(("api", response.status_code, response.content))
        response = api.post(f"/api/experiments/{campaign.pk}/turns/{tid}/regenerate/", {})
        answers.add(("api", response.status_code, response.content))
    assert {a[:2] for a in answers} == {("web", 404), ("api", 404)}
    assert len([a for a in answers if a[0] == "api"]) == 1
