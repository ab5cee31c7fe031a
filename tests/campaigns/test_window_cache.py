"""The window cache (`campaigns.reads.window_cache`) gives exactly the window a fresh
`packs.window_turn_query` gives, reads only the turns appended since when it can, and is
blind to hidden writes.

It stores only what reads outside a transaction gave, so these tests commit
(``transaction=True``). Hypothesis interleaves random writes (as for the hit rows cache)
with window reads by every kind of viewer under bounds that move up and down.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import Turn
from campaigns.reads import packs, window_cache
from campaigns.reads.selectors import Viewer
from context_engine.types import HistoryNeeds
from tests.campaigns.test_hit_cache import _write, writes
from tests.campaigns.test_postings_cache import (
    HIDDEN,
    HIDDEN_WRITES,
    VIEWERS,
    _append,
    stamp,
    write_hidden,
)
from tests.campaigns.test_turn_terms import ROLES
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db(transaction=True)


def _bounds(shape: tuple[bool, bool, int]):
    """Windows of one shape (which parts it has, how many last turns), at random rounds."""
    has_rounds, has_hinges, last_turns = shape
    return st.builds(
        HistoryNeeds,
        from_round=st.integers(1, 5) if has_rounds else st.none(),
        hinge_from_round=st.integers(1, 5) if has_hinges else st.none(),
        last_turns=st.just(last_turns),
    )


windows = st.tuples(st.booleans(), st.booleans(), st.sampled_from((0, 1, 3))).flatmap(
    lambda shape: st.lists(_bounds(shape), min_size=1, max_size=3)
)


@pytest.fixture(autouse=True)
def _empty_cache():
    window_cache.clear()
    yield
    window_cache.clear()


def cached(experiment, viewer: Viewer, needs: HistoryNeeds) -> list[tuple]:
    """As the pack loader reads it: the stamp's count first, then the window's query."""
    now = stamp(experiment, viewer)
    read = window_cache.window_read(
        experiment_id=experiment.pk,
        viewer=viewer,
        needs=needs,
        created_at=experiment.created_at,
        last_seq=now.last_seq,
    )
    rows = read.query.rows() if read.query is not None else []
    return window_cache.finish(read, rows, now)


def fresh(experiment, viewer: Viewer, needs: HistoryNeeds) -> list[tuple]:
    query = packs.window_turn_query(
        experiment_id=experiment.pk,
        viewer=viewer,
        from_round=needs.from_round,
        hinge_from_round=needs.hinge_from_round,
        last_turns=needs.last_turns,
    )
    return query.rows() if query is not None else []


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    script=st.lists(st.tuples(writes, st.booleans()), max_size=12),
    needs=windows,
)
def test_cached_windows_are_what_a_fresh_read_gives(script, needs):
    """After a write (and some writes in a row), every viewer reads its window under
    each of a few bounds of one shape, in turn (so they move up and down)."""
    experiment = make_experiment(roles=ROLES)
    for number in range(8):
        make_turn(experiment, round=number // 2 + 1, content=f"Turn {number}.", hinge=number == 2)
    for step, then_read in [(None, True), *script]:
        if step is not None:
            _write(experiment, step)
        if not then_read:
            continue
        for viewer in VIEWERS:
            for wanted in needs:
                assert cached(experiment, viewer, wanted) == fresh(experiment, viewer, wanted)


RECENT = HistoryNeeds(from_round=3, hinge_from_round=1, last_turns=3)


def _rounds(experiment, count: int) -> list[Turn]:
    return [
        make_turn(experiment, round=number, content=f"Round {number}.")
        for number in range(1, count + 1)
    ]


def test_after_appends_only_the_appended_turns_are_read():
    experiment = make_experiment(roles=ROLES)
    turns = _rounds(experiment, 5)
    thorin = Viewer(role="Thorin")
    cached(experiment, thorin, RECENT)
    _append(experiment, "A late word.", "narrative", None, round_number=5)
    _append(experiment, "Another.", "action", None, round_number=6)

    now = stamp(experiment, thorin)
    read = window_cache.window_read(
        experiment_id=experiment.pk,
        viewer=thorin,
        needs=RECENT,
        created_at=experiment.created_at,
        last_seq=now.last_seq,
    )
    appended = read.query.rows()
    assert [row[1] for row in appended] == [turns[-1].seq + 1, turns[-1].seq + 2]
    window = window_cache.finish(read, appended, now)
    assert window == fresh(experiment, thorin, RECENT)
    assert window_cache.stats["kept"] == 1


def test_a_window_that_widens_or_a_readable_change_is_read_in_full():
    experiment = make_experiment(roles=ROLES)
    turns = _rounds(experiment, 5)
    thorin = Viewer(role="Thorin")
    cached(experiment, thorin, RECENT)
    wider = HistoryNeeds(from_round=1, hinge_from_round=1, last_turns=3)
    assert cached(experiment, thorin, wider) == fresh(experiment, thorin, wider)
    Turn.objects.filter(pk=turns[-1].pk).update(visibility=["Cassia"])
    assert cached(experiment, thorin, wider) == fresh(experiment, thorin, wider)
    assert window_cache.stats == {"kept": 0, "read": 3}


def test_reads_inside_a_transaction_store_nothing():
    experiment = make_experiment(roles=ROLES)
    _rounds(experiment, 4)
    thorin = Viewer(role="Thorin")
    with transaction.atomic():
        make_turn(experiment, round=4, content="Rolled back.")
        assert cached(experiment, thorin, RECENT) == fresh(experiment, thorin, RECENT)
        transaction.set_rollback(True)
    assert cached(experiment, thorin, RECENT) == fresh(experiment, thorin, RECENT)
    assert window_cache.stats == {"kept": 0, "read": 2}


hidden_steps = st.lists(st.one_of(*HIDDEN_WRITES), min_size=1, max_size=12)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=hidden_steps)
def test_writes_a_viewer_cannot_read_never_make_it_read_its_window_again(script):
    """Noninterference: whatever is written to turns Thorin reads neither before nor
    after, his next window comes from the kept one — the same work as if nothing had
    been written."""
    experiment = make_experiment(roles=ROLES)
    _rounds(experiment, 4)
    for audience in HIDDEN:
        make_turn(
            experiment, round=4, speaker="DM", kind="whisper", content="salt", visibility=audience
        )
    thorin = Viewer(role="Thorin")
    cached(experiment, thorin, RECENT)
    readable = set(
        Turn.objects.filter(experiment=experiment)
        .exclude(kind="whisper")
        .values_list("pk", flat=True)
    )
    for step in script:
        write_hidden(experiment, step, readable)
    window_cache.stats.update(kept=0, read=0)
    assert cached(experiment, thorin, RECENT) == fresh(experiment, thorin, RECENT)
    assert window_cache.stats == {"kept": 1, "read": 0}


def test_a_window_moved_on_by_an_append_keeps_its_hinge_anchors_only():
    """From the kept rows, a turn that left the last turns stays only as a hinge."""
    experiment = make_experiment(roles=ROLES)
    anchor = make_turn(experiment, round=1, content="The oath is sworn.", hinge=True)
    make_turn(experiment, round=1, content="Rain.")
    left = make_turn(experiment, round=2, content="More rain.")
    kept = make_turn(experiment, round=2, content="The gate opens.")
    thorin = Viewer(role="Thorin")
    anchors = HistoryNeeds(hinge_from_round=1, last_turns=2)
    assert [row[0] for row in cached(experiment, thorin, anchors)] == [
        anchor.pk,
        left.pk,
        kept.pk,
    ]
    added = make_turn(experiment, round=3, content="Dawn.")

    window = cached(experiment, thorin, anchors)
    assert [row[0] for row in window] == [anchor.pk, kept.pk, added.pk]
    assert window == fresh(experiment, thorin, anchors)
    assert window_cache.stats["kept"] == 1
