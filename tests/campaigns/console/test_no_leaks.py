"""After a /checkpoint (lore extracted, every audience's digest folded), every console page
and partial fetched as a player holds nothing of another audience's."""

import pytest
from django.urls import reverse

from campaigns.models import LoreEntry, Summary, Turn
from campaigns.services.memory import run_command
from tests.campaigns.console.conftest import ALLOWED, FORBIDDEN, HX

pytestmark = pytest.mark.django_db


def player_urls(exp, role):
    pk = exp.pk
    lore = list(LoreEntry.objects.filter(experiment=exp).values_list("pk", flat=True))
    summaries = list(Summary.objects.filter(experiment=exp).values_list("pk", flat=True))
    urls = [
        "/",
        reverse("console:campaign", args=[pk]),
        reverse("console:campaign", args=[pk]) + "?as=DM",
        reverse("console:campaign", args=[pk]) + "?kind=whisper",
        reverse("console:campaign", args=[pk]) + "?before=999999",
        reverse("console:whispers", args=[pk]),
        reverse("console:notes", args=[pk]),
        reverse("console:memory", args=[pk]),
        reverse("console:usage", args=[pk]),
        reverse("console:usage", args=[pk]) + "?round=1",
        reverse("console:seats", args=[pk]),
        reverse("console:dashboard"),
        reverse("console:context", args=[pk, role]),
        reverse("console:context", args=[pk, role]) + "?input=ledger+trapdoor+doubt",
        reverse("console:log", args=[pk]),
        reverse("console:log", args=[pk]) + "?format=md",
        reverse("console:log", args=[pk]) + "?format=html",
        reverse("console:log", args=[pk]) + "?as=DM&format=md",  # a player's `as` is refused
        reverse("console:export", args=[pk]),  # owner only: a 403 for the player
    ]
    for tab in ("proposed", "confirmed", "rejected", "invalidated"):
        urls.append(reverse("console:lore", args=[pk]) + f"?tab={tab}")
    urls += [reverse("console:lore_history", args=[pk, lid]) for lid in lore]
    urls += [
        reverse("console:memory", args=[pk]) + f"?a={a}&b={b}" for a in summaries for b in summaries
    ]
    notes = Turn.objects.filter(experiment=exp, kind="gm_note").values_list("pk", flat=True)
    urls += [reverse("console:note", args=[pk, n]) for n in notes]
    return urls


def test_no_page_or_partial_shows_a_player_another_audiences_text(
    as_user, owner, player, exp, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run_command(experiment=exp, command="checkpoint", user=owner)
    assert Summary.objects.filter(experiment=exp, audience=["DM"]).count() > 1
    client = as_user(player)
    seen_allowed = set()
    for url in player_urls(exp, "Thorin"):
        for headers in ({}, HX):
            response = client.get(url, **headers)
            body = response.content.decode()
            for name, marker in FORBIDDEN.items():
                if name == "cassia_secret":
                    continue  # the markers are checked below for the secret (never in pages)
                assert marker not in body, (url, name)
            assert FORBIDDEN["cassia_secret"] not in body, url
            seen_allowed |= {name for name, marker in ALLOWED.items() if marker in body}
    # The sweep reached real content: the player's own things are on the pages.
    assert {
        "public",
        "thorin_whisper",
        "thorin_monologue",
        "public_lore",
        "thorin_digest",
    } <= seen_allowed
