"""Every partial endpoint over the permission matrix, plain and with HX-Request, and the
markup rules a strict Content Security Policy needs (no inline script or handlers)."""

import re

import pytest
from django.urls import reverse

from campaigns.models import Summary, Turn
from campaigns.reads import numbering, selectors
from tests.campaigns.console.conftest import HX
from tests.campaigns.console.matrix import check_get

pytestmark = pytest.mark.django_db


def partial_urls(secrets, persona="owner"):
    """The URLs as ``persona`` is shown them: a player knows lore entries and digests by
    their position among the ones Thorin reads (`numbering.shown_lore`), not by id."""
    exp = secrets.experiment
    pk = exp.pk
    note = Turn.objects.get(experiment=exp, kind="gm_note")
    thorin = Summary.objects.get(experiment=exp, audience=["Thorin"])
    lore = secrets.lore["public_lore"]
    lore_id, thorin_id = lore.pk, thorin.pk
    if persona == "player":
        viewer = selectors.viewer_for_role(experiment=exp, role="Thorin")
        (lore,) = numbering.shown_lore(experiment=exp, viewer=viewer, entries=[lore])
        (thorin,) = numbering.shown_summaries(experiment=exp, viewer=viewer, summaries=[thorin])
        lore_id, thorin_id = lore.shown_id, thorin.shown_id
    return {
        "earlier": reverse("console:campaign", args=[pk]) + "?before=6",
        "note": reverse("console:note", args=[pk, note.pk]),
        "note_edit": reverse("console:note_edit", args=[pk, note.pk]),
        "lore_history": reverse("console:lore_history", args=[pk, lore_id]),
        "memory_diff": reverse("console:memory", args=[pk]) + f"?a={thorin_id}&b={thorin_id}",
        "job": reverse("console:job", args=[pk, secrets.job.pk]),
    }


# Notes and jobs are the DM's and the owner's: a player is refused (403), not shown them.
EXPECTED = {
    "owner": dict.fromkeys(
        ("earlier", "note", "note_edit", "lore_history", "memory_diff", "job"), 200
    ),
    "staff": dict.fromkeys(
        ("earlier", "note", "note_edit", "lore_history", "memory_diff", "job"), 200
    ),
    "player": {
        "earlier": 200,
        "note": 403,
        "note_edit": 403,
        "lore_history": 200,
        "memory_diff": 200,
        "job": 403,
    },
    "stranger": dict.fromkeys(
        ("earlier", "note", "note_edit", "lore_history", "memory_diff", "job"), 404
    ),
    "anonymous": dict.fromkeys(
        ("earlier", "note", "note_edit", "lore_history", "memory_diff", "job"), "login"
    ),
}


@pytest.mark.parametrize("persona", EXPECTED)
def test_every_partial_over_the_permission_matrix(as_user, personas, secrets_campaign, persona):
    client = as_user(personas[persona])
    for name, url in partial_urls(secrets_campaign, persona).items():
        expected = EXPECTED[persona][name]
        if name == "job" and expected == 200:
            # A finished job answers 286 to htmx (stop polling) and 200 to a plain GET.
            assert client.get(url).status_code == 200
            assert client.get(url, **HX).status_code == 286
            continue
        check_get(client, url, expected)


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
# An asset from a CDN (in a src or href: a random CSRF token may spell "cdn" itself).
EXTERNAL_ASSET = re.compile(r"""(?:src|href)\s*=\s*["'][^"']*(?://unpkg|cdn)""", re.I)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)


def test_no_page_has_inline_script_or_event_handlers(as_user, owner, secrets_campaign):
    exp = secrets_campaign.experiment
    pk = exp.pk
    urls = [
        "/",
        reverse("console:campaign", args=[pk]),
        reverse("console:whispers", args=[pk]),
        reverse("console:notes", args=[pk]),
        reverse("console:lore", args=[pk]) + "?tab=confirmed",
        reverse("console:context", args=[pk, "DM"]) + "?compare=Thorin",
        reverse("console:memory", args=[pk]),
        *partial_urls(secrets_campaign).values(),
    ]
    client = as_user(owner)
    for url in urls:
        body = client.get(url).content.decode()
        assert not INLINE_SCRIPT.search(body), url
        assert not INLINE_HANDLER.search(body), url
        assert "hx-on" not in body, url
        assert not EXTERNAL_ASSET.search(body), url
