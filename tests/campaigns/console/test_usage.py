"""The Usage page `/campaigns/<id>/usage/`: owner and staff only; per round and per agent."""

from __future__ import annotations

import pytest
from django.urls import reverse

from campaigns.services.usage import model_call_record
from context_engine.llm import Usage
from tests.campaigns.console.conftest import HX, is_fragment
from tests.campaigns.console.matrix import check_get

pytestmark = pytest.mark.django_db

EDIT = {"owner": 200, "staff": 200, "player": 403, "stranger": 404, "anonymous": "login"}
MESSAGES = [{"role": "system", "content": "Prefix. " * 30}, {"role": "user", "content": "Go"}]


def url(exp) -> str:
    return reverse("console:usage", args=[exp.pk])


@pytest.fixture
def used(exp):
    for key, round, role, usage in [
        ("a", 1, "DM", Usage(400, 0, 40)),
        ("b", 1, "Thorin", Usage(300, 0, 30)),
        ("c", 2, "DM", Usage(500, 250, 50)),
        ("d", 2, "Thorin", Usage(320, 160, 32)),
    ]:
        model_call_record(
            experiment=exp, key=key, round=round, role=role, step="act", model="gemini-2.5-flash",
            messages=MESSAGES, usage=usage,
        )  # fmt: skip
    return exp


@pytest.mark.parametrize("persona", EDIT)
def test_the_usage_page_over_the_permission_matrix(as_user, personas, used, persona):
    check_get(as_user(personas[persona]), url(used), EDIT[persona], marker='id="usage-agents"')


def test_the_owner_sees_the_latest_round_by_agent_with_the_saving(as_user, owner, used):
    body = as_user(owner).get(url(used)).content.decode()
    assert "Round 2 by agent" in body
    assert "250 (50%)" in body and "160 (50%)" in body  # cached tokens and their share
    assert "410 saved" in body  # the whole campaign's saving
    assert 'href="?round=1"' in body


def test_choosing_a_round_swaps_only_the_agent_table(as_user, owner, used):
    response = as_user(owner).get(url(used) + "?round=1", **HX)
    body = response.content.decode()
    assert is_fragment(response) and body.lstrip().startswith(
        '<section class="panel" id="usage-agents"'
    )
    assert "Round 1 by agent" in body and "400" in body and "first call" in body


def test_an_unknown_round_falls_back_to_the_latest(as_user, owner, used):
    body = as_user(owner).get(url(used) + "?round=junk").content.decode()
    assert "Round 2 by agent" in body


def test_a_campaign_without_calls_says_so(as_user, owner, exp):
    body = as_user(owner).get(url(exp)).content.decode()
    assert "No model calls yet" in body


def test_the_usage_tab_is_shown_to_editors_only(as_user, owner, player, exp):
    tab = f'href="{url(exp)}"'
    assert tab in as_user(owner).get(reverse("console:campaign", args=[exp.pk])).content.decode()
    assert (
        tab not in as_user(player).get(reverse("console:campaign", args=[exp.pk])).content.decode()
    )


def test_the_page_has_no_view_as_switch_since_it_is_the_owners_own(as_user, owner, used):
    assert 'id="view-as"' not in as_user(owner).get(url(used)).content.decode()
