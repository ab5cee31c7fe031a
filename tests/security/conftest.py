"""Attacker-side tests: a linked player (or an anonymous caller) tries what the security
review found; each test sends the request as an attacker would and then checks what
every other role can read afterwards."""

from __future__ import annotations

import pytest

from tests.campaigns.api.conftest import client_for
from tests.campaigns.console.conftest import as_user  # noqa: F401 (the console client fixture)


@pytest.fixture
def api():
    """``api(user)`` → a token-authenticated APIClient (anonymous for None)."""
    return client_for


@pytest.fixture
def reveal_campaign(campaign, owner, player, other_player):
    """DM, Thorin (the attacker's role) and Cassia, whose secret goal is revealed only after
    round 5; the DM has opened round 1."""
    campaign.participants.filter(role="Cassia").update(
        secret="SECRET-cassia-poisoned-vane", reveal_round=5
    )
    campaign.participants.filter(role="DM").update(secret="SECRET-dm-twist", reveal_round=8)
    campaign.current_round = 1
    campaign.save(update_fields=["current_round"])
    return campaign
