"""The pack loader's precompiled reads agree with the ORM selectors (`readable_by`).

`campaigns.reads.packs` compiles its SQL from the selectors' own rules once and then
only binds values. Hypothesis throws random logs at both — every kind, valid audiences,
corrupt stored visibility (which must fail closed to DM-only), hinges, rounds — and random
viewers (players, the DM, a judge), and the two must return the same rows.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import LoreEntry, Turn
from campaigns.reads import adapters, packs, search, selectors
from campaigns.reads.precompiled import run_all
from campaigns.services.experiments import participant_create
from tests.factories import make_experiment

pytestmark = pytest.mark.django_db

ROLES = ("DM", "Thorin", "Cassia", "Oracle")
KINDS = ("narrative", "choice", "action", "whisper", "gm_note", "monologue", "system")
CORRUPT = ("Thorin", [], [1, 2], {"roles": ["Thorin"]}, 7, True, ["Thorin", 3])
audiences = st.one_of(
    st.none(),
    st.lists(st.sampled_from(ROLES[:3]), min_size=1, max_size=3, unique=True),
    st.sampled_from(CORRUPT),
)
turns = st.lists(
    st.tuples(
        st.integers(0, 9),  # round
        st.sampled_from(ROLES[:3]),  # speaker
        st.sampled_from(KINDS),
        audiences,
        st.booleans(),  # hinge
    ),
    max_size=30,
)


def rows(query) -> list[tuple]:
    """A precompiled query's rows ([] for a query the loader would not send)."""
    return query.rows() if query is not None else []


def _campaign(log, lore):
    experiment = make_experiment(roles=ROLES[:3])
    participant_create(experiment=experiment, role="Oracle", kind="judge")
    Turn.objects.bulk_create(
        Turn(
            experiment=experiment,
            round=round_,
            seq=seq,
            speaker=speaker,
            kind=kind,
            content=f"turn {seq}",
            visibility=audience,
            hinge=hinge,
        )
        for seq, (round_, speaker, kind, audience, hinge) in enumerate(log, 1)
    )
    for index, (audience, status) in enumerate(lore):
        LoreEntry.objects.create(
            experiment=experiment,
            term=f"term {index}",
            key=f"term {index}",
            audience=audience,
            status=status,
        )
    return experiment


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    log=turns,
    lore=st.lists(
        st.tuples(audiences, st.sampled_from(["proposed", "confirmed", "rejected"])), max_size=6
    ),
    role=st.sampled_from(ROLES),
    from_round=st.one_of(st.none(), st.integers(-3, 10)),
    hinge_from=st.one_of(st.none(), st.integers(-3, 10)),
    last_turns=st.integers(0, 8),
)
def test_precompiled_reads_return_exactly_what_the_selectors_return(
    log, lore, role, from_round, hinge_from, last_turns
):
    experiment = _campaign(log, lore)
    viewer = selectors.viewer_for_role(experiment=experiment, role=role)
    visible = list(selectors.turns_visible_to(experiment=experiment, viewer=viewer))

    everything = rows(packs.all_turn_query(experiment_id=experiment.pk, viewer=viewer))
    assert [row[0] for row in everything] == [t.pk for t in visible]

    transcript = [t for t in visible if t.kind != "monologue"]
    nth = transcript[-last_turns].seq if last_turns and len(transcript) >= last_turns else 0
    expected = {
        t.pk
        for t in visible
        if (from_round is not None and t.round >= from_round)
        or (hinge_from is not None and t.hinge and t.round >= hinge_from)
        or (last_turns and t.seq >= nth)
    }
    window = rows(
        packs.window_turn_query(
            experiment_id=experiment.pk,
            viewer=viewer,
            from_round=from_round,
            hinge_from_round=hinge_from,
            last_turns=last_turns,
        )
    )
    assert {row[0] for row in window} == expected
    assert len(window) == len(expected)

    own = rows(
        packs.own_monologue_query(experiment_id=experiment.pk, viewer=viewer, speaker=role, count=2)
    )
    mine = [t.pk for t in visible if t.kind == "monologue" and t.speaker == role]
    assert [row[0] for row in own] == mine[::-1][:2]

    if not viewer.omniscient:
        stubs = rows(
            packs.whisper_stub_query(
                experiment_id=experiment.pk, viewer=viewer, from_round=None, last_turns=0, full=True
            )
        )
        unreadable = selectors.whisper_existence_for(experiment=experiment, viewer=viewer)
        assert {row[0] for row in stubs} == {t.pk for t in unreadable}
        assert not {row[0] for row in stubs} & {t.pk for t in visible}

    lore_rows = rows(packs.lore_query(experiment_id=experiment.pk, viewer=viewer))
    readable_lore = selectors.lore_visible_to(experiment=experiment, viewer=viewer).exclude(
        status="rejected"
    )
    assert [row[0] for row in lore_rows] == sorted(entry.pk for entry in readable_lore)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    log=turns,
    lore=st.lists(
        st.tuples(audiences, st.sampled_from(["proposed", "confirmed", "rejected"])), max_size=6
    ),
    role=st.sampled_from(ROLES),
    from_round=st.one_of(st.none(), st.integers(-3, 10)),
    last_turns=st.integers(0, 8),
)
def test_reads_batched_into_one_round_trip_return_exactly_the_rows_of_each_statement(
    log, lore, role, from_round, last_turns
):
    """The pack loader batches its reads (`precompiled.run_all`, one statement on
    PostgreSQL): each query's rows, JSON columns and order included, are unchanged."""
    experiment = _campaign(log, lore)
    viewer = selectors.viewer_for_role(experiment=experiment, role=role)
    ids = {"experiment_id": experiment.pk}
    queries = [
        packs.window_turn_query(
            **ids, viewer=viewer, from_round=from_round, hinge_from_round=None,
            last_turns=last_turns,
        ),
        packs.own_monologue_query(**ids, viewer=viewer, speaker=role, count=2),
        None,
        packs.whisper_stub_query(
            **ids, viewer=viewer, from_round=None, last_turns=0, full=True
        ),
        packs.lore_query(**ids, viewer=viewer),
        packs.newest_summary_query(**ids, viewer=viewer, own_key="x"),
        packs.pin_id_query(**ids, role=role, count=5),
    ]  # fmt: skip
    one_each = [query.rows() if query is not None else [] for query in queries]
    with CaptureQueriesContext(connection) as captured:
        batched = run_all(queries)
    assert batched == one_each
    live = sum(query is not None for query in queries)
    assert len(captured) == (1 if connection.vendor == "postgresql" else live)


def test_every_statement_reads_json_columns_as_text_as_sqlite_does():
    """A row is the same tuple on both vendors: JSON columns as their text, also where
    PostgreSQL sends rows in binary (the hits' statement), so a row read by either
    statement is the same tuple, and the row views kept per row
    (`adapters.turn_view_row`) are built once."""
    experiment = _campaign(
        [(1, "DM", "whisper", ["Thorin"], False), (1, "Thorin", "action", None, False)], []
    )
    Turn.objects.filter(experiment=experiment, seq=1).update(tags=["omen"])
    viewer = selectors.viewer_for_role(experiment=experiment, role="Thorin")
    turn_ids = list(
        Turn.objects.filter(experiment=experiment).order_by("seq").values_list("pk", flat=True)
    )

    hits = search.hit_query(
        experiment_id=experiment.pk, viewer=viewer, hit_ids=turn_ids[:1], neighbours=1
    ).rows()
    window = packs.all_turn_query(experiment_id=experiment.pk, viewer=viewer).rows()

    hit = next(row[1:11] for row in hits if row[0])
    assert (hit[6], hit[7]) == ('["Thorin"]', '["omen"]')
    assert [(row[6], row[7]) for row in window] == [('["Thorin"]', '["omen"]'), (None, "[]")]
    assert adapters.turn_view_row(hit) is adapters.turn_view_row(window[0])
