"""Regenerating a model's step on real services (issue 24 ask 4): the Job is queued, a
real Celery worker asks the model again from real Redis into the real PostgreSQL, and a
second delivery of the same task replaces nothing more."""

from __future__ import annotations

import pytest

from babel_site.celery import app
from campaigns import demo
from campaigns.models import Job, Turn, TurnRevision
from campaigns.services import dispatch, transcripts
from campaigns.services.relay import round_start
from campaigns.services.turn_fixes import step_regenerate_start
from tests.integration.test_relay import default_queue
from tests.integration.worker import celery_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def finished(job_id) -> bool:
    return Job.objects.get(pk=job_id).status in ("succeeded", "failed")


def test_a_regeneration_is_played_by_a_worker_once(real_services, owner):
    experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
    experiment.participants.update(model="offline")
    with celery_worker(real_services) as queue, default_queue(queue):
        played = round_start(experiment=experiment, user=owner)
        wait_for(lambda: finished(played.pk), timeout=120)
        played.refresh_from_db()
        assert played.status == "succeeded", played.message
        turn = Turn.objects.filter(
            experiment=experiment, round=played.result["round"], speaker="Thorin", kind="action"
        ).first()
        job = step_regenerate_start(turn=turn, user=owner)
        assert job.status == "pending", "not eager: the worker runs it"
        wait_for(lambda: finished(job.pk), timeout=120)
        job.refresh_from_db()
        assert (job.kind, job.status, job.progress) == ("regenerate", "succeeded", 100), job.message
        assert turn.pk in job.result["replaced"] + job.result["unchanged"]
        revisions = TurnRevision.objects.filter(turn__experiment=experiment).count()
        # The same message delivered again: the Job is claimed already; nothing more.
        again = dispatch.task("run_regenerate").apply_async((str(job.pk),), queue=queue)
        assert again.get(timeout=60) == "succeeded"
    assert TurnRevision.objects.filter(turn__experiment=experiment).count() == revisions
    assert app.conf.task_default_queue != queue
