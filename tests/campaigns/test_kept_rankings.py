"""Rankings kept under a stamp (`postings_cache.ranked`): made once per stamp and query,
made again after any change the viewer may read, and never kept from a read that saw a
turn past the stamp or from inside a transaction. The Hypothesis property beside the
postings' (`test_postings_cache`) compares every kept ranking with a fresh one."""

from __future__ import annotations

import pytest
from django.db import transaction

from campaigns.models import Turn
from campaigns.reads.selectors import Viewer
from context_engine.ranking import make_query
from tests.campaigns.test_postings_cache import (
    ROLES,
    Reader,
    _empty_cache,  # noqa: F401  (the autouse fixture: every cache emptied around each test)
    ranked,
    ranked_afresh,
    stamp,
)
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_ranking_under_the_same_stamp_is_not_made_again():
    experiment = make_experiment(roles=ROLES)
    for content in ("salt lantern", "the oath", "salt gate", "ember gate"):
        make_turn(experiment, content=content)
    thorin, query = Viewer(role="Thorin"), make_query("salt gate")
    ranks: list = []
    first = ranked(experiment, thorin, query, ranks=ranks)
    reader = Reader(experiment, thorin)
    assert ranked(experiment, thorin, query, reader, ranks) == first
    assert len(ranks) == 1 and reader.calls == []
    assert ranked(experiment, thorin, make_query("ember"), ranks=ranks)  # another query ranks
    assert len(ranks) == 2

    make_turn(experiment, content="salt gate ember")  # a new stamp: ranked again
    again = ranked(experiment, thorin, query, ranks=ranks)
    assert len(ranks) == 3
    assert again == ranked_afresh(experiment, thorin, query) != first


def test_an_edit_to_a_readable_turn_ranks_again():
    experiment = make_experiment(roles=ROLES)
    turn = make_turn(experiment, content="salt lantern")
    make_turn(experiment, content="ember gate")
    thorin, query = Viewer(role="Thorin"), make_query("salt")
    assert ranked(experiment, thorin, query) == [turn.pk]

    Turn.objects.filter(pk=turn.pk).update(content="lantern")  # the newest seq stays
    assert ranked(experiment, thorin, query) == ranked_afresh(experiment, thorin, query) == []


def test_a_ranking_that_saw_a_turn_past_its_stamp_is_not_kept():
    """A turn appended while the pack read (past the seq its stamp holds) may be among
    the postings: that ranking is not the stamp's, and is made again next time."""
    experiment = make_experiment(roles=ROLES)
    make_turn(experiment, content="salt lantern")
    thorin, query = Viewer(role="Thorin"), make_query("salt")
    before = stamp(experiment, thorin)
    make_turn(experiment, content="salt oath")
    ranks: list = []
    for _ in range(2):
        ranked(experiment, thorin, query, ranks=ranks, at=before)
    assert len(ranks) == 2 and len(ranks[0]) == 2


def test_a_ranking_inside_a_transaction_is_not_kept():
    experiment = make_experiment(roles=ROLES)
    make_turn(experiment, content="salt lantern")
    thorin, query = Viewer(role="Thorin"), make_query("salt")
    ranks: list = []
    with transaction.atomic():
        ranked(experiment, thorin, query, ranks=ranks)
    ranked(experiment, thorin, query, ranks=ranks)
    assert len(ranks) == 2
