"""A turn's term rows (`campaigns_turn_terms`, migrations 0037 and 0038) are kept exact by
triggers, whatever writes the turns.

Ranked retrieval reads its postings from these rows (`search_postgres.postings`) and
applies the selector's turn rule to the columns they copy, so a row that outlived its
turn's new content, audience, hold or kind would be a leak or a miss. Hypothesis runs
random writes — new turns, edits through the ORM and through bulk updates, changes of
audience, kind and speaker, holds and their release, deletions, an import's turns
waiting for the index and then indexed — and after them the rows must be exactly those a
rebuild from the turns gives.
"""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import Turn
from campaigns.services.transcripts.indexing import index_imported_turns
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db

PG_TERMS = importlib.import_module("campaigns.migrations.0037_turn_terms")
SQLITE_TERMS = importlib.import_module("campaigns.migrations.0038_search_from_term_rows")
WORDS = ("lantern", "lanterns", "salt", "oath", "the", "running", "ember", "gate", "and")
ROLES = ("DM", "Thorin", "Cassia")
KINDS = ("narrative", "action", "whisper", "gm_note", "monologue")
AUDIENCES = (None, ["Thorin"], ["DM", "Cassia"], ["Thorin", "Cassia"], "corrupt")

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), texts, st.sampled_from(KINDS), st.sampled_from(AUDIENCES)),
        st.tuples(st.just("edit"), st.integers(0, 20), texts),
        st.tuples(st.just("bulk_edit"), st.integers(0, 20), texts),
        st.tuples(st.just("audience"), st.integers(0, 20), st.sampled_from(AUDIENCES)),
        st.tuples(st.just("recast"), st.integers(0, 20), st.sampled_from(KINDS)),
        st.tuples(st.just("speaker"), st.integers(0, 20), st.sampled_from(ROLES)),
        st.tuples(st.just("hold"), st.integers(0, 20), st.booleans()),
        st.tuples(st.just("delete"), st.integers(0, 20)),
        st.tuples(st.just("import"), texts),
        st.tuples(st.just("index")),
    ),
    max_size=10,
)


def term_rows() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM campaigns_turn_terms")
        return sorted(cursor.fetchall(), key=repr)


def rebuilt_rows() -> list[tuple]:
    """The rows a rebuild from the turns gives, as each database makes them (SQLite: of
    the turns of experiments without a backlog, which have none until indexed)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(PG_TERMS.TERMS_OF.format(rows="campaigns_turn"))
        else:
            cursor.execute(
                SQLITE_TERMS.ROWS_OF.format(row="t").replace(
                    "FROM json_each", "FROM campaigns_turn AS t, json_each"
                )
            )
        return sorted(cursor.fetchall(), key=repr)


def _apply(experiment, operation) -> None:
    turns = list(Turn.objects.filter(experiment=experiment).order_by("seq"))
    name, *args = operation
    picks = bool(args) and isinstance(args[0], int) and bool(turns)
    target = turns[args[0] % len(turns)] if picks else None
    if name == "add":
        content, kind, audience = args
        turn = make_turn(experiment, content=content or "silence")
        # Any stored kind and audience, valid or not (the rules are the service's).
        Turn.objects.filter(pk=turn.pk).update(kind=kind, visibility=_stored(audience))
    elif name == "import":  # as an import writes it: outside the index until indexed
        _wait_for_index(make_turn(experiment, content=args[0] or "silence"))
    elif name == "index":
        index_imported_turns(experiment_id=experiment.pk)
    elif target is None:
        return
    elif name == "edit":
        target.content = args[1]
        target.save(update_fields=["content"])
    elif name == "bulk_edit":
        Turn.objects.filter(experiment=experiment, seq__gte=target.seq).update(content=args[1])
    elif name == "audience":
        Turn.objects.filter(pk=target.pk).update(visibility=_stored(args[1]))
    elif name == "recast":
        Turn.objects.filter(pk=target.pk).update(kind=args[1])
    elif name == "speaker":
        Turn.objects.filter(pk=target.pk).update(speaker=args[1])
    elif name == "hold":
        Turn.objects.filter(pk=target.pk).update(held_at=timezone.now() if args[1] else None)
    elif name == "delete":
        Turn.objects.filter(pk=target.pk).delete()


def _wait_for_index(turn: Turn) -> None:
    """As an import leaves a turn (PostgreSQL: outside the index, a column that is not a
    model field; SQLite: without term rows), with its experiment's backlog row."""
    from campaigns.models import SearchBacklog

    SearchBacklog.objects.get_or_create(experiment_id=turn.experiment_id)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "UPDATE campaigns_turn SET search_indexed = false WHERE id = %s", [turn.pk]
            )
        else:
            cursor.execute(
                "DELETE FROM campaigns_turn_terms WHERE experiment_id = %s AND seq = %s",
                [turn.experiment_id, turn.seq],
            )


def _stored(audience):
    return ["Thorin", 3] if audience == "corrupt" else audience


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=operations, second=operations)
def test_term_rows_are_what_a_rebuild_from_the_turns_gives(first, second):
    experiments = (make_experiment(roles=ROLES), make_experiment(roles=ROLES))
    for experiment, ops in zip(experiments, (first, second), strict=True):
        for operation in ops:
            _apply(experiment, operation)
        index_imported_turns(experiment_id=experiment.pk)  # what an import left, if any
    assert term_rows() == rebuilt_rows()


@pytest.mark.parametrize(
    "change",
    [
        {"content": "running lanterns"},
        {"visibility": ["Thorin"]},
        {"visibility": ["Thorin", 3]},
        {"kind": "monologue"},
        {"speaker": "Cassia"},
        {"held_at": "now"},
        {"round": 7},
        {"tokens": 99},
        {"seq": 50},
    ],
    ids=lambda change: next(iter(change)),
)
def test_a_change_to_any_column_the_rows_copy_rewrites_them(change):
    """Every column a posting carries or the turn rule reads is copied: a change to any
    one of them alone must reach the rows (else a stale audience would be a leak)."""
    experiment = make_experiment(roles=ROLES)
    turn = make_turn(experiment, content="The salt oath holds.")
    values = {k: timezone.now() if v == "now" else v for k, v in change.items()}
    Turn.objects.filter(pk=turn.pk).update(**values)
    assert term_rows() == rebuilt_rows()
    column = next(iter(change))
    assert column == "content" or len(term_rows()) == 3  # salt, oath, hold


def test_a_deleted_campaign_leaves_no_term_rows():
    kept, gone = make_experiment(roles=ROLES), make_experiment(roles=ROLES)
    for experiment in (kept, gone):
        make_turn(experiment, content="The ember gate opens.")
    gone.delete()
    assert {row[0] for row in term_rows()} == {kept.pk}
    assert term_rows() == rebuilt_rows()


def test_an_imports_turns_get_their_term_rows_when_they_are_indexed():
    experiment = make_experiment(roles=ROLES)
    for _ in range(3):
        _wait_for_index(make_turn(experiment, content="salt oath"))
    assert term_rows() == []
    assert index_imported_turns(experiment_id=experiment.pk) == 3
    assert index_imported_turns(experiment_id=experiment.pk) == 0
    assert sorted(row[1] for row in term_rows()) == ["oath"] * 3 + ["salt"] * 3
    assert term_rows() == rebuilt_rows()
