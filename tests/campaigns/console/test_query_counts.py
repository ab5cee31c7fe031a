"""No N+1: every page costs the same number of queries at 100 and at 5,000 turns."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from campaigns.bench import create_campaign
from campaigns.models import LoreEntry, Summary, Turn
from campaigns.services import pack_cache

pytestmark = pytest.mark.django_db


def pages(exp):
    pk = exp.pk
    lore = LoreEntry.objects.filter(experiment=exp).first()
    digests = list(Summary.objects.filter(experiment=exp).order_by("pk")[:2])
    note = Turn.objects.filter(experiment=exp, kind="gm_note").first()
    return [
        "/",
        reverse("console:campaign", args=[pk]),
        reverse("console:campaign", args=[pk]) + "?as=Thorin",
        reverse("console:campaign", args=[pk]) + "?before=60",
        reverse("console:whispers", args=[pk]),
        reverse("console:notes", args=[pk]),
        reverse("console:lore", args=[pk]) + "?tab=confirmed",
        reverse("console:lore_history", args=[pk, lore.pk]),
        reverse("console:context", args=[pk, "Thorin"]),
        reverse("console:context", args=[pk, "DM"]) + "?compare=Thorin&input=tide",
        reverse("console:memory", args=[pk]),
        reverse("console:memory", args=[pk]) + f"?a={digests[0].pk}&b={digests[0].pk}",
        reverse("console:note_edit", args=[pk, note.pk]),
    ]


def counts(client, exp):
    cache.clear()  # both runs start with cold dashboard meters and cold packs
    pack_cache.clear()
    result = {}
    for index, url in enumerate(pages(exp)):
        for htmx in (False, True):
            headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
            with CaptureQueriesContext(connection) as ctx:
                response = client.get(url, **headers)
            assert response.status_code == 200, url
            statements = [query["sql"] for query in ctx.captured_queries]
            hit_reads = sum("hits AS MATERIALIZED" in sql for sql in statements)
            result[(index, htmx)] = (len(statements) - hit_reads, hit_reads)
    return result


def test_each_page_costs_the_same_queries_at_100_and_5000_turns(client, owner):
    small = create_campaign(100)
    big = create_campaign(5000)
    for experiment in (small, big):
        experiment.owner = owner
        experiment.save(update_fields=["owner"])
    client.force_login(owner)
    # One unmeasured pass first: what a process pays once (its first use of a page, of a
    # lookup Django keeps per process) is not a per-turn cost, and whether an earlier test
    # in this process paid it already depends on the order the tests ran in.
    counts(client, small)
    # The dashboard lists both campaigns in both runs; everything else is per campaign.
    at_100 = counts(client, small)
    at_5000 = counts(client, big)
    # A pack's hits' rows are not read when the window holds every hit with its
    # neighbours (`hit_cache.window_hit_rows`): at 100 turns it may hold the whole
    # history. Every other statement is the same, and the hits' reads never more.
    assert {page: other for page, (other, _) in at_100.items()} == {
        page: other for page, (other, _) in at_5000.items()
    }
    for page, (_, hit_reads) in at_100.items():
        assert hit_reads <= at_5000[page][1], page
