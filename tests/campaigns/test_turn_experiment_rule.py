"""PostgreSQL keeps "a turn's experiment exists" with statement-level triggers (migration
0020) instead of a per-row foreign-key check: the same rule, whoever writes."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, connections, transaction

from campaigns.models import Experiment, Turn
from campaigns.services import transcripts
from tests.services import database_is_postgres, unavailable


@pytest.fixture(autouse=True)
def _postgres():
    if not database_is_postgres():
        unavailable("the statement-level experiment check is PostgreSQL's (SQLite keeps its FK)")


INSERT = (
    "INSERT INTO campaigns_turn (experiment_id, round, seq, speaker, kind, content, tags, "
    "hinge, needs_review, tokens, created_at) "
    "VALUES (%s, 1, %s, 'DM', 'narrative', 'The bell tolls.', '[]', false, false, 3, now())"
)


def _experiment(name="rule") -> Experiment:
    return Experiment.objects.create(name=name)


@pytest.mark.django_db
def test_a_turn_naming_no_experiment_is_refused():
    missing = (Experiment.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 99
    refused = pytest.raises(IntegrityError, match="not an experiment")
    with refused, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(INSERT, [missing, 1])
    assert not Turn.objects.filter(experiment_id=missing).exists()


@pytest.mark.django_db
def test_one_bad_row_refuses_the_whole_statement():
    experiment = _experiment()
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            INSERT.replace(
                "now())",
                "now()), (%s, 1, 2, 'DM', 'narrative', 'x', '[]', false, false, 1, now())",
            ),
            [experiment.pk, 1, experiment.pk + 1000],
        )
    assert not Turn.objects.filter(experiment=experiment).exists()


@pytest.mark.django_db
def test_one_statement_may_write_turns_of_several_existing_experiments():
    first, second = _experiment("first"), _experiment("second")
    row = "(%s, 1, %s, 'DM', 'narrative', 'x', '[]', false, false, 1, now())"
    with connection.cursor() as cursor:
        # Three rows naming two experiments: each experiment counted once, both exist.
        cursor.execute(
            INSERT.split(" VALUES ")[0] + " VALUES " + ", ".join([row] * 3),
            [first.pk, 1, second.pk, 1, first.pk, 2],
        )
    assert Turn.objects.filter(experiment=first).count() == 2
    assert Turn.objects.filter(experiment=second).count() == 1


@pytest.mark.django_db
def test_a_turn_cannot_move_to_another_experiment():
    first, second = _experiment("first"), _experiment("second")
    with connection.cursor() as cursor:
        cursor.execute(INSERT, [first.pk, 1])
    turn = Turn.objects.get(experiment=first)
    with pytest.raises(IntegrityError, match="cannot move"), transaction.atomic():
        Turn.objects.filter(pk=turn.pk).update(experiment=second)
    assert Turn.objects.get(pk=turn.pk).experiment_id == first.pk
    Turn.objects.filter(pk=turn.pk).update(content="Edited in place.")  # other updates pass


@pytest.mark.django_db
def test_an_experiment_with_turns_cannot_be_deleted_behind_the_orms_back():
    experiment = _experiment()
    with connection.cursor() as cursor:
        cursor.execute(INSERT, [experiment.pk, 1])
    refused = pytest.raises(IntegrityError, match="turns still belong")
    with refused, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM campaigns_experiment WHERE id = %s", [experiment.pk])
    assert Turn.objects.filter(experiment=experiment).count() == 1
    experiment.delete()  # the ORM deletes the turns first
    assert not Turn.objects.filter(experiment_id=experiment.pk).exists()


@pytest.mark.django_db
def test_an_import_still_stores_its_turns():
    from campaigns import demo

    experiment = transcripts.import_transcript(data=demo.transcript())
    assert experiment.turns.count() == len(demo.transcript()["turns"])


@pytest.mark.django_db(transaction=True)
def test_a_delete_racing_a_turn_insert_waits_for_it_and_then_fails():
    """A concurrent delete of the experiment waits for the inserting transaction (its
    locks on the experiment row), then finds the new turn and is refused."""
    experiment = _experiment("raced")
    inserted, outcome = threading.Event(), {}

    def delete_meanwhile():
        inserted.wait(10)
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '10s'")
                cursor.execute("DELETE FROM campaigns_experiment WHERE id = %s", [experiment.pk])
            outcome["deleted"] = True
        except IntegrityError as exc:
            outcome["refused"] = str(exc)
        finally:
            connections.close_all()

    deleter = threading.Thread(target=delete_meanwhile)
    deleter.start()
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(INSERT, [experiment.pk, 1])
            inserted.set()
            deleter.join(0.5)
            assert deleter.is_alive()  # waiting on the insert's lock
    finally:
        inserted.set()
        deleter.join(20)
    assert "turns still belong" in outcome.get("refused", ""), outcome
    assert Experiment.objects.filter(pk=experiment.pk).exists()
    assert Turn.objects.filter(experiment=experiment).count() == 1
    experiment.delete()
