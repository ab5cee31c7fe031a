"""Recent hits served from the window's own rows (`hit_cache.window_hit_rows`).

After a new turn a pack's new hits are often recent turns the window has just read; their
rows, neighbours and round openings are then found in the window's rows instead of the
hits' statement. Hypothesis checks that every hit served so is exactly what
`search.hit_query` gives for it, over random histories (appends in new rounds, inserts
below the newest seq, edits, audiences, kinds, holds, deletions), windows and readers; and
the pack built with it is the pack built without.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import Turn
from campaigns.reads import hit_cache, packs, search, window_cache
from campaigns.reads.selectors import Viewer
from campaigns.services import context
from tests.campaigns.test_hit_cache import _write, writes
from tests.campaigns.test_postings_cache import stamp
from tests.campaigns.test_turn_terms import ROLES
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db(transaction=True)

READERS = (Viewer(role="Thorin"), Viewer(role="Cassia"), Viewer(role="DM", is_dm=True))


def window_rows(experiment, viewer, from_round, last_turns) -> list[tuple]:
    return packs.window_turn_query(
        experiment_id=experiment.pk,
        viewer=viewer,
        from_round=from_round,
        hinge_from_round=None,
        last_turns=last_turns,
    ).rows()


def entries(rows, experiment, viewer, neighbours) -> dict:
    return hit_cache._entries_from(rows, stamp(experiment, viewer), neighbours)[0]


def served_and_fresh(experiment, viewer, from_round, last_turns, neighbours, extra=()):
    rows = window_rows(experiment, viewer, from_round, last_turns)
    window = hit_cache.Window(rows, window_cache.transcript_from(rows, last_turns), from_round)
    ids = [*dict.fromkeys([row[0] for row in rows] + list(extra))]
    served, rest = hit_cache.window_hit_rows(window, ids, neighbours)
    from_window = entries(served, experiment, viewer, neighbours)
    hits = [hit for hit in ids if hit not in rest]
    assert set(from_window) == set(hits)
    fresh = search.hit_query(
        experiment_id=experiment.pk, viewer=viewer, hit_ids=hits, neighbours=neighbours
    ).rows()
    return from_window, entries(fresh, experiment, viewer, neighbours), rest


def test_the_newest_turns_are_served_from_the_window():
    experiment = make_experiment(roles=ROLES)
    for n in range(12):
        make_turn(experiment, content=f"salt {n}", round=1 + n // 4)
    thorin = Viewer(role="Thorin")
    newest = list(Turn.objects.filter(experiment=experiment).order_by("-seq")[:3])
    served, fresh, rest = served_and_fresh(
        experiment, thorin, from_round=3, last_turns=6, neighbours=1
    )
    assert {turn.pk for turn in newest} <= set(served)
    assert served == {hit: fresh[hit] for hit in served}
    # The window's oldest transcript turn has its earlier neighbour outside: not served.
    oldest = min(row[0] for row in window_rows(experiment, thorin, 3, 6))
    assert oldest in rest


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    script=st.lists(writes, max_size=12),
    viewer=st.sampled_from(READERS),
    from_round=st.one_of(st.none(), st.integers(1, 4)),
    last_turns=st.integers(1, 6),
    neighbours=st.integers(1, 2),
)
def test_hits_served_from_the_window_are_what_the_hit_statement_gives(
    script, viewer, from_round, last_turns, neighbours
):
    experiment = make_experiment(roles=ROLES)
    for content in ("salt lantern", "the oath", "ember gate"):
        make_turn(experiment, content=content)
    for step in script:
        _write(experiment, step)
    served, fresh, _ = served_and_fresh(experiment, viewer, from_round, last_turns, neighbours)
    assert served == fresh


def test_a_pack_with_hits_from_the_window_is_the_pack_without(monkeypatch):
    """The bench's campaign, a new turn at a time: every role's pack is the same whether
    its recent hits come from the window or from the hits' statement."""
    from campaigns import bench
    from campaigns.management.commands.bench_context import INPUT
    from context_engine.render import pack_to_json

    experiment = bench.create_campaign(300)
    rng = __import__("random").Random(7)
    served = []
    real = hit_cache.window_hit_rows

    def counting(window, ids, neighbours):
        rows, rest = real(window, ids, neighbours)
        served.append(len(ids) - len(rest))
        return rows, rest

    monkeypatch.setattr(hit_cache, "window_hit_rows", counting)
    for role in bench.ROLES:
        for _ in range(3):
            bench.append_turn(experiment, rng)
            hit_cache.clear()
            with_window = pack_to_json(
                context.pack_for_role(
                    experiment=experiment, role=role, input_text=INPUT, use_cache=False
                )
            )
            hit_cache.clear()
            monkeypatch.setattr(context, "_window_for_hits", lambda *args: None)
            without = pack_to_json(
                context.pack_for_role(
                    experiment=experiment, role=role, input_text=INPUT, use_cache=False
                )
            )
            monkeypatch.undo()
            monkeypatch.setattr(hit_cache, "window_hit_rows", counting)
            assert with_window == without, role
    assert sum(served) > 0
