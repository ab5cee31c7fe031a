"""Kept rows (`precompiled.run_all`, PostgreSQL): a pack's lore is sent by the server only
when the rows its viewer may read changed, and is then exactly what a fresh read gives.

The server sends a stamp of the readable rows' ids and row versions (``xmin``), so an edit
shows at once even when nothing sets a timestamp (a queryset ``update``), and a write to
lore the viewer may not read leaves the viewer's kept rows in use: it costs the viewer's
pack nothing. Rows are kept only from reads outside a transaction, so these tests commit.
"""

from __future__ import annotations

import itertools

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import LoreEntry
from campaigns.reads import packs, precompiled
from campaigns.reads.precompiled import run_all
from campaigns.reads.selectors import Viewer
from tests.campaigns.test_postings_cache import VIEWERS
from tests.factories import make_experiment
from tests.services import database_is_postgres, unavailable

pytestmark = pytest.mark.django_db(transaction=True)

THORIN = Viewer(role="Thorin")
HIDDEN_FROM_THORIN = (["Cassia"], ["DM", "Cassia"])


@pytest.fixture(autouse=True)
def _postgres_and_nothing_kept():
    if not database_is_postgres():
        unavailable("kept rows are PostgreSQL's batched reads (DATABASE_URL)")
    precompiled.clear_kept()
    yield
    precompiled.clear_kept()


def lore_read(experiment, viewer: Viewer) -> list[tuple]:
    """As the pack loader reads lore: batched with another statement (`run_all`)."""
    lore, _changes = run_all(
        [
            packs.lore_query(experiment_id=experiment.pk, viewer=viewer),
            packs.turn_change_count_query(experiment_id=experiment.pk, viewer=viewer),
        ]
    )
    return lore


def fresh(experiment, viewer: Viewer) -> list[tuple]:
    """The same statement on its own: never kept."""
    return packs.lore_query(experiment_id=experiment.pk, viewer=viewer).rows()


def lore(experiment, term: str, audience=None, **fields) -> LoreEntry:
    return LoreEntry.objects.create(
        experiment=experiment,
        term=term,
        key=term,
        definition=fields.pop("definition", f"What {term} is."),
        audience=audience,
        **fields,
    )


@pytest.fixture
def campaign():
    experiment = make_experiment()
    lore(experiment, "lantern-moss")
    lore(experiment, "tide-bell", definition="A bell the sea rings.")
    lore(experiment, "salt-oath", audience=["Cassia"])
    return experiment


def test_unchanged_lore_is_not_sent_again(campaign):
    first = lore_read(campaign, THORIN)
    assert precompiled.kept_stats == {"kept": 0, "read": 1}
    assert lore_read(campaign, THORIN) == first == fresh(campaign, THORIN)
    assert precompiled.kept_stats == {"kept": 1, "read": 1}
    assert [row[1] for row in first] == ["lantern-moss", "tide-bell"]


def test_an_edit_that_sets_no_timestamp_shows_in_the_next_read(campaign):
    lore_read(campaign, THORIN)
    LoreEntry.objects.filter(term="tide-bell").update(definition="A bell that rings twice.")
    after = lore_read(campaign, THORIN)
    assert after == fresh(campaign, THORIN)
    assert any("rings twice" in str(row) for row in after)
    assert precompiled.kept_stats == {"kept": 0, "read": 2}


def test_a_write_to_lore_the_viewer_cannot_read_costs_it_nothing(campaign):
    before = lore_read(campaign, THORIN)
    hidden = lore(campaign, "deep-ledger", audience=["Cassia"])
    LoreEntry.objects.filter(term="salt-oath").update(definition="Sworn again.")
    LoreEntry.objects.filter(pk=hidden.pk).update(audience=["DM", "Cassia"])
    hidden.delete()
    assert lore_read(campaign, THORIN) == before == fresh(campaign, THORIN)
    assert precompiled.kept_stats == {"kept": 1, "read": 1}


def test_lore_shown_hidden_rejected_or_deleted_leaves_the_kept_rows(campaign):
    lore_read(campaign, THORIN)
    LoreEntry.objects.filter(term="salt-oath").update(audience=["Cassia", "Thorin"])
    assert "salt-oath" in [row[1] for row in lore_read(campaign, THORIN)]
    LoreEntry.objects.filter(term="lantern-moss").update(audience=["Cassia"])
    assert "lantern-moss" not in [row[1] for row in lore_read(campaign, THORIN)]
    LoreEntry.objects.filter(term="tide-bell").update(status=LoreEntry.Status.REJECTED)
    assert lore_read(campaign, THORIN) == fresh(campaign, THORIN)
    LoreEntry.objects.filter(term="salt-oath").delete()
    assert lore_read(campaign, THORIN) == fresh(campaign, THORIN) == []
    assert precompiled.kept_stats == {"kept": 0, "read": 5}


def test_rows_read_inside_a_transaction_are_never_kept(campaign):
    with transaction.atomic():
        LoreEntry.objects.filter(term="tide-bell").update(definition="Never said.")
        inside = lore_read(campaign, THORIN)
        assert any("Never said." in str(row) for row in inside)
        lore_read(campaign, THORIN)
        transaction.set_rollback(True)
    after = lore_read(campaign, THORIN)
    assert after == fresh(campaign, THORIN)
    assert not any("Never said." in str(row) for row in after)
    assert precompiled.kept_stats == {"kept": 0, "read": 3}


def test_each_viewer_keeps_its_own_rows(campaign):
    for viewer in VIEWERS:
        lore_read(campaign, viewer)
    for viewer in VIEWERS:
        assert lore_read(campaign, viewer) == fresh(campaign, viewer)
    assert precompiled.kept_stats == {"kept": len(VIEWERS), "read": len(VIEWERS)}


AUDIENCES = (None, ["Thorin"], ["Cassia"], ["DM", "Cassia"], ["Thorin", "Cassia"])
writes = st.lists(
    st.one_of(
        st.tuples(st.just("create"), st.sampled_from(AUDIENCES)),
        st.tuples(st.just("edit"), st.integers(0, 9)),
        st.tuples(st.just("audience"), st.integers(0, 9), st.sampled_from(AUDIENCES)),
        st.tuples(st.just("reject"), st.integers(0, 9)),
        st.tuples(st.just("delete"), st.integers(0, 9)),
    ),
    max_size=4,
)


_numbers = itertools.count()  # new terms stay unique across examples (one campaign)


def _write(experiment, step: tuple, number: int) -> None:
    entries = list(LoreEntry.objects.filter(experiment=experiment).order_by("id"))
    kind = step[0]
    if kind == "create":
        lore(experiment, f"coin-{number}", audience=step[1])
        return
    if not entries:
        return
    target = LoreEntry.objects.filter(pk=entries[step[1] % len(entries)].pk)
    if kind == "edit":
        target.update(definition=f"Edited {number}.")
    elif kind == "audience":
        target.update(audience=step[2])
    elif kind == "reject":
        target.update(status=LoreEntry.Status.REJECTED)
    else:
        target.delete()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rounds=st.lists(writes, min_size=1, max_size=5))
def test_kept_lore_is_always_what_a_fresh_read_gives(campaign, rounds):
    precompiled.clear_kept()
    for steps in rounds:
        for step in steps:
            _write(campaign, step, next(_numbers))
        for viewer in VIEWERS:
            assert lore_read(campaign, viewer) == fresh(campaign, viewer), (viewer, steps)
