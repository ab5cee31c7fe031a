"""Turn indexes (migration 0018): an agent's own monologues are read through the small
partial index `turn_monologue_by_speaker`, on both databases. PostgreSQL's generic plan
(a prepared pack read) uses it only because the query names the kind as SQL text
(`MONOLOGUE_KIND`): with the kind as a parameter it plans another index."""

from __future__ import annotations

import pytest
from django.db import connection

from campaigns import bench
from campaigns.models import MONOLOGUE_KIND, Turn
from campaigns.reads.packs import own_monologue_query
from campaigns.reads.selectors import turns_visible_to, viewer_for_role
from tests.plans import plan

pytestmark = pytest.mark.django_db

INDEX = "turn_monologue_by_speaker"


@pytest.fixture
def campaign():
    experiment = bench.create_campaign(3000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return experiment


@pytest.mark.parametrize("role", ["Thorin", "DM"])
def test_own_monologues_are_read_through_the_partial_index(campaign, role):
    viewer = viewer_for_role(experiment=campaign, role=role)
    query = own_monologue_query(experiment_id=campaign.pk, viewer=viewer, speaker="Thorin", count=5)
    found = plan(query.compiled.sql, query.compiled.bind(query.values))
    assert INDEX in found, found


def test_the_literal_kind_selects_exactly_the_monologues(campaign):
    literal = Turn.objects.filter(experiment=campaign).filter(MONOLOGUE_KIND)
    bound = Turn.objects.filter(experiment=campaign, kind=Turn.Kind.MONOLOGUE)
    assert literal.count() > 0
    assert list(literal.values_list("pk", flat=True)) == list(bound.values_list("pk", flat=True))


def test_own_monologues_are_the_newest_of_that_speaker_the_viewer_may_read(campaign):
    viewer = viewer_for_role(experiment=campaign, role="Thorin")
    rows = own_monologue_query(
        experiment_id=campaign.pk, viewer=viewer, speaker="Thorin", count=5
    ).rows()
    expected = list(
        turns_visible_to(experiment=campaign, viewer=viewer)
        .filter(kind=Turn.Kind.MONOLOGUE, speaker="Thorin")
        .order_by("-seq")
        .values_list("pk", flat=True)[:5]
    )
    assert [row[0] for row in rows] == expected
    assert len(expected) == 5


def test_the_digest_worker_reads_monologues_through_the_partial_index(campaign):
    """`digests.strategic_update`'s read (the ORM's own statement, values bound)."""
    viewer = viewer_for_role(experiment=campaign, role="Thorin")
    queryset = turns_visible_to(experiment=campaign, viewer=viewer).filter(
        MONOLOGUE_KIND, speaker="Thorin", needs_review=False
    )
    assert INDEX in queryset.explain()
