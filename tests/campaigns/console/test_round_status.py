"""The campaign page's round-status poller: a reader at the table learns, without
reloading, that new turns arrived or that the round now waits for them — and learns
nothing of turns they cannot read."""

from __future__ import annotations

import re
from urllib.parse import unquote

import pytest
from django.urls import reverse

from campaigns.services.relay import round_start
from tests.campaigns.console.conftest import HX
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def page_url(exp):
    return reverse("console:campaign", args=[exp.pk])


def seen_key(client, exp) -> str:
    """The key the page's poller carries, as a browser would read it from the page."""
    body = client.get(page_url(exp)).content.decode()
    match = re.search(r'part=round_status&amp;seen=([^"&]*)', body)
    assert match, "the campaign page carries a round-status poller"
    return unquote(match.group(1))


def poll(client, exp, seen):
    return client.get(page_url(exp), {"part": "round_status", "seen": seen}, **HX)


def triggers(response) -> set[str]:
    return {name.strip() for name in response.get("HX-Trigger", "").split(",") if name.strip()}


def test_nothing_new_means_no_refresh(as_user, player, exp):
    client = as_user(player)
    response = poll(client, exp, seen_key(client, exp))
    assert response.status_code == 200
    assert 'id="round-status"' in response.content.decode()
    assert "<html" not in response.content.decode()
    assert triggers(response) == set()


def test_a_turn_the_player_reads_refreshes_their_timeline(as_user, player, exp):
    client = as_user(player)
    seen = seen_key(client, exp)
    make_turn(exp, content="The bridge groans.")
    assert triggers(poll(client, exp, seen)) == {"turns-changed"}


def test_a_turn_the_player_cannot_read_changes_nothing_they_can_observe(as_user, player, exp):
    client = as_user(player)
    seen = seen_key(client, exp)
    make_turn(exp, speaker="DM", kind="gm_note", visibility=["DM"], content="ZQX-hidden-note")
    response = poll(client, exp, seen)
    assert triggers(response) == set()
    assert seen_key(client, exp) == seen
    assert "ZQX-hidden-note" not in response.content.decode()


def test_when_the_round_starts_waiting_for_the_player_their_composer_refreshes(
    as_user, owner, player, exp, django_capture_on_commit_callbacks
):
    client = as_user(player)
    seen = seen_key(client, exp)
    exp.participants.update(model="offline")
    exp.participants.filter(role="Thorin").update(model="human")
    with django_capture_on_commit_callbacks(execute=True):
        round_start(experiment=exp, user=owner)
    response = poll(client, exp, seen)
    assert {"turns-changed", "round-changed"} <= triggers(response)
    assert "Your turn, Thorin." in response.content.decode()
    composer = client.get(page_url(exp), {"part": "composer"}, **HX).content.decode()
    assert "The round is waiting for you, Thorin." in composer
    assert 'id="composer"' in composer and "<html" not in composer


def test_an_active_round_polls_faster_than_an_idle_page(
    as_user, owner, player, exp, django_capture_on_commit_callbacks
):
    client = as_user(player)
    idle = poll(client, exp, "").content.decode()
    assert 'hx-trigger="every 15s"' in idle
    exp.participants.update(model="offline")
    exp.participants.filter(role="Thorin").update(model="human")
    with django_capture_on_commit_callbacks(execute=True):
        round_start(experiment=exp, user=owner)
    assert 'hx-trigger="every 4s"' in poll(client, exp, "").content.decode()


def test_the_players_header_follows_the_campaign_clock_without_a_reload(as_user, player, exp):
    client = as_user(player)
    seen = seen_key(client, exp)
    full = client.get(page_url(exp)).content.decode()
    assert full.count('id="current-round"') == 1  # the header's, not a second copy
    type(exp).objects.filter(pk=exp.pk).update(current_round=exp.current_round + 3)
    body = poll(client, exp, seen).content.decode()
    expected = f'<strong id="current-round" hx-swap-oob="true">{exp.current_round + 3}</strong>'
    assert expected in body
