"""The campaign page's live view (issue 25, static/js/live.js): served by ASGI, the page names
the stream it subscribes to — with the page's own ``as`` for an owner viewing as a role,
never another role's for a player — and whose inspector a draft may link to. The
round-status poller stays in the markup: it is the no-JavaScript and fallback path. Served
by WSGI (where an open stream would hold a thread) the page does not subscribe at all."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient
from django.urls import reverse

pytestmark = pytest.mark.django_db


def asgi_client(user) -> AsyncClient:
    client = AsyncClient()
    async_to_sync(client.aforce_login)(user)
    return client


def live_attrs(client, exp, **params) -> dict[str, str]:
    response = async_to_sync(client.get)(reverse("console:campaign", args=[exp.pk]), params)
    body = response.content.decode()
    match = re.search(r'<section id="live"([^>]*)>', body)
    assert match, "the campaign page has a live section"
    attrs = {k: unescape(v) for k, v in re.findall(r'(data-[a-z-]+)="([^"]*)"', match.group(1))}
    attrs["_body"] = body
    return attrs


def test_the_owner_subscribes_to_everything_and_may_open_every_inspector(owner, exp):
    attrs = live_attrs(asgi_client(owner), exp)
    assert attrs["data-live-url"] == reverse("console:live", args=[exp.pk])
    assert attrs["data-inspect-roles"].split(",") == ["DM", "Thorin", "Cassia"]
    assert attrs["data-inspect-url"] == reverse("console:context", args=[exp.pk, "__role__"])
    assert json.loads(attrs["data-kinds"])["whisper"] == "Whisper"
    body = attrs["_body"]
    assert "/static/js/live.js" in body
    assert 'id="round-status"' in body and 'hx-trigger="every' in body  # the fallback poll


def test_an_owner_viewing_as_a_role_subscribes_as_that_role(owner, exp):
    attrs = live_attrs(asgi_client(owner), exp, **{"as": "Thorin"})
    assert attrs["data-live-url"] == reverse("console:live", args=[exp.pk]) + "?as=Thorin"


def test_a_player_subscribes_as_themselves_whatever_the_url_says(player, exp):
    attrs = live_attrs(asgi_client(player), exp, **{"as": "Cassia"})
    assert attrs["data-live-url"] == reverse("console:live", args=[exp.pk])  # no ?as=
    assert attrs["data-inspect-roles"] == "Thorin"  # their own inspector only


def test_under_wsgi_the_page_keeps_the_poll_alone(as_user, owner, exp):
    body = as_user(owner).get(reverse("console:campaign", args=[exp.pk])).content.decode()
    assert 'id="live"' not in body and "live.js" not in body
    assert 'id="round-status"' in body and 'hx-trigger="every' in body
