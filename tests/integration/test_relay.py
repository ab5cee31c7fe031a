"""The relay on real services: a round started through `round_start` is played by a real
Celery worker process from real Redis into the real PostgreSQL, and two starts racing on
PostgreSQL's row lock give exactly one round."""

from __future__ import annotations

import contextlib
import threading
import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from babel_site.celery import app
from campaigns import demo
from campaigns.models import Job, Turn
from campaigns.reads.selectors import current_round
from campaigns.services import transcripts
from campaigns.services.relay import round_start, rounds
from tests.integration.worker import celery_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


@contextlib.contextmanager
def default_queue(queue: str):
    """Send tasks dispatched by services (plain ``.delay``) to ``queue``."""
    previous = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    try:
        yield
    finally:
        app.conf.task_default_queue = previous


def test_a_round_started_through_the_service_is_played_by_a_worker(real_services, owner):
    experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
    before = current_round(experiment=experiment)
    with celery_worker(real_services) as queue, default_queue(queue):
        job = round_start(experiment=experiment, user=owner)
        assert job.status == "pending", "not eager: the worker plays it"
        wait_for(lambda: Job.objects.get(pk=job.pk).status in ("succeeded", "failed"), timeout=120)
    job.refresh_from_db()
    assert (job.status, job.progress) == ("succeeded", 100), job.message
    assert job.result["round"] == before + 1
    turns = list(Turn.objects.filter(experiment=experiment, round=before + 1).order_by("seq"))
    speakers = [t.speaker for t in turns]
    assert speakers[0] == "DM" and speakers[-1] == "DM"
    assert {"Thorin", "Cassia", "Wren"} <= set(speakers)
    assert sorted(pk for s in job.result["steps"] for pk in s["turns"]) == [t.pk for t in turns]
    assert all(t.visibility is None for t in turns if t.kind in ("narrative", "action"))
    assert all(t.visibility == [t.speaker] for t in turns if t.kind == "monologue")


def test_two_starts_racing_on_postgres_give_one_round_and_one_clear_error(
    real_services, owner, monkeypatch
):
    experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
    real_check = rounds._round_running
    meet = threading.Barrier(2)

    def check_then_meet(locked):
        # Both starts look for a running round, then wait for each other before creating
        # one. Holding the experiment's row lock, the second cannot even look until the
        # first has committed (the wait times out, and the second sees the first's job);
        # without the lock both would see none and both would create a round.
        running = real_check(locked)
        with contextlib.suppress(threading.BrokenBarrierError):
            meet.wait(timeout=3)
        return running

    monkeypatch.setattr(rounds, "_round_running", check_then_meet)
    barrier = threading.Barrier(2)
    outcomes: list[object] = []

    def start():
        try:
            barrier.wait(timeout=10)
            outcomes.append(round_start(experiment=experiment, user=owner))
        except ValidationError as exc:
            outcomes.append(exc.message_dict)
        finally:
            connection.close()

    nobody_listens = f"babel-test-unconsumed-{uuid.uuid4().hex[:8]}"
    with default_queue(nobody_listens):
        threads = [threading.Thread(target=start) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

    errors = [o for o in outcomes if isinstance(o, dict)]
    jobs = [o for o in outcomes if isinstance(o, Job)]
    assert errors == [{"round": ["A round is already running."]}]
    assert len(jobs) == 1
    assert list(Job.objects.filter(experiment=experiment).values_list("pk", flat=True)) == [
        jobs[0].pk
    ]
