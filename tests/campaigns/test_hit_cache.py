"""The hit rows cache (`campaigns.reads.hit_cache`) gives exactly the rows a fresh
`search.hit_query` gives, reads only the hits it does not hold, and is blind to hidden
writes.

Like the postings cache it stores only what reads outside a transaction gave, so these
tests commit (``transaction=True``). Hypothesis interleaves random writes — appends,
inserts below the newest seq, edits, bulk edits, changes of audience, kind, speaker,
tags and the hinge flag, holds, deletions — with cached reads of random hits by every
kind of viewer, and each read must equal a fresh one.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import Turn
from campaigns.reads import hit_cache, postings_cache, search
from campaigns.reads.packs import TURN_COLUMNS
from campaigns.reads.selectors import Viewer
from tests.campaigns.test_postings_cache import (
    HIDDEN,
    HIDDEN_WRITES,
    VIEWERS,
    _append,
    _low_insert,
    stamp,
    write_hidden,
)
from tests.campaigns.test_turn_terms import AUDIENCES, KINDS, ROLES, _apply, texts
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db(transaction=True)

WIDTH = len(TURN_COLUMNS)
TAGS = ([], ["oath"], ["oath", "salt"])

writes = st.one_of(
    st.tuples(
        st.just("append"),
        texts,
        st.sampled_from(KINDS),
        st.sampled_from(AUDIENCES),
        st.booleans(),
    ),
    st.tuples(st.just("low"), texts, st.sampled_from(AUDIENCES)),
    st.tuples(st.just("edit"), st.integers(0, 20), texts),
    st.tuples(st.just("bulk_edit"), st.integers(0, 20), texts),
    st.tuples(st.just("audience"), st.integers(0, 20), st.sampled_from(AUDIENCES)),
    st.tuples(st.just("recast"), st.integers(0, 20), st.sampled_from(KINDS)),
    st.tuples(st.just("speaker"), st.integers(0, 20), st.sampled_from(ROLES)),
    st.tuples(st.just("tags"), st.integers(0, 20), st.sampled_from(TAGS)),
    st.tuples(st.just("hinge"), st.integers(0, 20), st.booleans()),
    st.tuples(st.just("hold"), st.integers(0, 20), st.booleans()),
    st.tuples(st.just("delete"), st.integers(0, 20)),
)


@pytest.fixture(autouse=True)
def _empty_caches():
    hit_cache.clear()
    postings_cache.clear()
    yield
    hit_cache.clear()
    postings_cache.clear()


class Reader:
    """`search.hit_query` as the pack loader calls it, remembering each call."""

    def __init__(self, experiment, viewer: Viewer, neighbours: int):
        self.experiment, self.viewer, self.neighbours = experiment, viewer, neighbours
        self.calls: list[list[int]] = []

    def __call__(self, ids: list[int]) -> list[tuple]:
        self.calls.append(list(ids))
        return search.hit_query(
            experiment_id=self.experiment.pk,
            viewer=self.viewer,
            hit_ids=ids,
            neighbours=self.neighbours,
        ).rows()


def _shaped(rows: list[tuple]) -> tuple[dict, list]:
    """What the loader takes from the rows: the hits' rows by id, and the other rows."""
    hits = {row[1]: row[1 : 1 + WIDTH] for row in rows if row[0]}
    near = sorted(row[1 : 1 + WIDTH] for row in rows if not row[0])
    return hits, near


def cached(experiment, viewer, ids, neighbours=1, reader=None):
    reader = reader or Reader(experiment, viewer, neighbours)
    hits, near = hit_cache.hit_rows(stamp(experiment, viewer), ids, neighbours, reader)
    shown = {row[0] for row in hits}
    # The hits come in the order asked for, each once.
    assert [row[0] for row in hits] == [i for i in dict.fromkeys(ids) if i in shown]
    return {row[0]: row for row in hits}, sorted(near)


def fresh(experiment, viewer, ids, neighbours=1):
    return _shaped(Reader(experiment, viewer, neighbours)(list(dict.fromkeys(ids))))


def _pick(experiment, chosen: str | list[int]) -> list[int]:
    """Every turn, the turns at even or odd places, or those at the ``chosen`` places
    (modulo their number: -1 is the newest)."""
    turns = Turn.objects.filter(experiment=experiment).order_by("seq")
    ids = list(turns.values_list("pk", flat=True))
    if isinstance(chosen, str):
        return {"all": ids, "even": ids[::2], "odd": ids[1::2]}[chosen]
    return [ids[p % len(ids)] for p in chosen] if ids else []


def _append_in_round(experiment, content: str, kind: str, audience, next_round: bool) -> None:
    """An appended turn (the next seq), in the newest round or the one after it: a new
    round's first readable turn is the opening turn of the hits in it."""
    newest = Turn.objects.filter(experiment=experiment).order_by("-seq").first()
    round_number = (newest.round if newest else 1) + next_round
    _append(experiment, content, kind, audience, round_number)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    script=st.lists(st.tuples(writes, st.booleans()), max_size=12),
    places=st.lists(st.integers(-3, 20), max_size=4),  # -1: the newest
    neighbours=st.integers(1, 2),
)
def test_cached_hit_rows_are_what_a_fresh_read_gives(script, places, neighbours):
    """After a write (and some writes in a row), every viewer reads every other turn as
    its hits (from the first, and from the second: the others are their neighbours)
    and a few turns at random places."""
    experiment = make_experiment(roles=ROLES)
    for content in ("salt lantern", "the oath", "ember gate"):
        make_turn(experiment, content=content)
    for step, then_read in [(None, True), *script]:
        if step is not None:
            _write(experiment, step)
        if not then_read:
            continue
        for viewer in VIEWERS:
            for chosen in ("even", "odd", places):
                ids = _pick(experiment, chosen)
                assert cached(experiment, viewer, ids, neighbours) == fresh(
                    experiment, viewer, ids, neighbours
                )


def _write(experiment, step) -> None:
    name, *args = step
    if name == "append":
        _append_in_round(experiment, *args)
    elif name == "low":
        _low_insert(experiment, *args)
    elif name in ("tags", "hinge"):
        ids = _pick(experiment, [args[0]])
        if ids:
            Turn.objects.filter(pk=ids[0]).update(**{name: args[1]})
    else:
        _apply(experiment, step)


def test_a_second_read_with_nothing_new_reads_nothing():
    experiment = make_experiment(roles=ROLES)
    turns = [make_turn(experiment, content=f"salt {n}") for n in range(6)]
    thorin = Viewer(role="Thorin")
    ids = [turns[1].pk, turns[3].pk]
    first = Reader(experiment, thorin, 1)
    hits, near = cached(experiment, thorin, ids, reader=first)
    assert set(hits) == set(ids) and [row[0] for row in near] == [
        turns[0].pk,
        turns[2].pk,
        turns[4].pk,
    ]
    again = Reader(experiment, thorin, 1)
    assert cached(experiment, thorin, ids, reader=again) == fresh(experiment, thorin, ids)
    assert again.calls == []


def test_after_an_append_only_a_hit_whose_later_neighbour_was_missing_is_read_again():
    experiment = make_experiment(roles=ROLES)
    turns = [make_turn(experiment, content=f"salt {n}") for n in range(4)]
    thorin = Viewer(role="Thorin")
    middle, newest = turns[1].pk, turns[3].pk
    cached(experiment, thorin, [middle, newest])
    added = make_turn(experiment, content="salt and ember")

    reader = Reader(experiment, thorin, 1)
    hits, near = cached(experiment, thorin, [middle, newest], reader=reader)
    assert reader.calls == [[newest]]  # the middle hit's neighbours cannot change
    assert (hits, near) == fresh(experiment, thorin, [middle, newest])
    assert added.pk in [row[0] for row in near]


def test_a_tag_or_hinge_edit_is_read_again():
    """Only the hit rows carry tags and the hinge flag: migration 0040 logs their edits."""
    experiment = make_experiment(roles=ROLES)
    turns = [make_turn(experiment, content=f"salt {n}") for n in range(4)]
    thorin = Viewer(role="Thorin")
    ids = [turns[1].pk]
    cached(experiment, thorin, ids)
    Turn.objects.filter(pk=turns[2].pk).update(tags=["oath"])  # a neighbour's
    reader = Reader(experiment, thorin, 1)
    assert cached(experiment, thorin, ids, reader=reader) == fresh(experiment, thorin, ids)
    assert reader.calls == [ids]
    Turn.objects.filter(pk=turns[1].pk).update(hinge=True)
    hits, _ = cached(experiment, thorin, ids)
    assert hits[turns[1].pk][TURN_COLUMNS.index("hinge")]


def test_reads_inside_a_transaction_store_nothing():
    experiment = make_experiment(roles=ROLES)
    turns = [make_turn(experiment, content=f"salt {n}") for n in range(3)]
    thorin = Viewer(role="Thorin")
    ids = [turns[0].pk]
    with transaction.atomic():
        Turn.objects.filter(pk=turns[1].pk).update(content="salt, rolled back")
        assert cached(experiment, thorin, ids) == fresh(experiment, thorin, ids)
        transaction.set_rollback(True)
    reader = Reader(experiment, thorin, 1)
    _, near = cached(experiment, thorin, ids, reader=reader)
    assert reader.calls == [ids]
    assert near[0][TURN_COLUMNS.index("content")] == "salt 1"


hidden_steps = st.lists(st.one_of(*HIDDEN_WRITES), min_size=1, max_size=12)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=hidden_steps)
def test_writes_a_viewer_cannot_read_never_make_it_read_its_hits_again(script):
    """Noninterference: whatever is written to turns Thorin reads neither before nor
    after (appends aside, which move the newest seq for everyone), his held hits are
    served without a read — the same work, so the same time, as if nothing happened."""
    experiment = make_experiment(roles=ROLES)
    turns = [make_turn(experiment, content=f"salt {n}") for n in range(5)]
    for audience in HIDDEN:
        make_turn(experiment, speaker="DM", kind="whisper", content="salt", visibility=audience)
    make_turn(experiment, content="the last word")
    thorin = Viewer(role="Thorin")
    ids = [turns[1].pk, turns[3].pk]
    cached(experiment, thorin, ids, neighbours=2)
    stored = Turn.objects.filter(experiment=experiment)
    readable = set(stored.exclude(kind="whisper").values_list("pk", flat=True))
    for step in script:
        write_hidden(experiment, step, readable)
    reader = Reader(experiment, thorin, 2)
    assert cached(experiment, thorin, ids, neighbours=2, reader=reader) == fresh(
        experiment, thorin, ids, neighbours=2
    )
    assert reader.calls == []


def test_a_hit_whose_round_had_no_opening_turn_is_read_again_after_an_append():
    """A player's own monologue is a hit but opens no round (neighbours and openings
    leave monologues out): a readable turn of its round appended later dates it, even
    when the hit's later neighbours were all there."""
    experiment = make_experiment(roles=ROLES)
    make_turn(experiment, content="salt lantern")
    plan = make_turn(
        experiment, round=2, speaker="Thorin", kind="monologue", content="salt", visibility=None
    )
    make_turn(experiment, round=3, content="The third day.")
    thorin = Viewer(role="Thorin")
    hits, near = cached(experiment, thorin, [plan.pk])
    assert plan.pk in hits and len(near) == 2  # its neighbours, no opening
    _append(experiment, "The second day, told late.", "narrative", None, round_number=2)

    reader = Reader(experiment, thorin, 1)
    hits, near = cached(experiment, thorin, [plan.pk], reader=reader)
    assert reader.calls == [[plan.pk]]
    assert "The second day, told late." in [row[5] for row in near]
    assert (hits, near) == fresh(experiment, thorin, [plan.pk])
