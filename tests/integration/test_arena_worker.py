"""A real worker runs an Arena job from real Redis against real PostgreSQL."""

import copy

import pytest

from campaigns.models import ArenaRun, Job
from campaigns.services import transcripts
from campaigns.tasks import run_arena
from context_engine.arena.generate import generate_campaign
from tests.integration.worker import celery_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def test_a_worker_runs_the_arena_once_with_progress(real_services, owner):
    data = generate_campaign(rounds=30, players=2, seed=4)
    experiment = transcripts.import_transcript(data=copy.deepcopy(data), owner=owner)
    job = Job.objects.create(
        experiment=experiment,
        kind=Job.Kind.ARENA,
        result={"params": {"strategies": ["layered", "triage"], "budgets": [8000]}},
    )
    with celery_worker(real_services) as queue:
        assert run_arena.apply_async(args=[str(job.pk)], queue=queue).get(timeout=120) == (
            "succeeded"
        )
        # Redelivered: the claim is gone, nothing runs or is stored again.
        assert run_arena.apply_async(args=[str(job.pk)], queue=queue).get(timeout=60) == (
            "succeeded"
        )
        assert run_arena.apply_async(args=["not-a-job"], queue=queue).get(timeout=60) is None
    wait_for(lambda: ArenaRun.objects.filter(job=job).exists())
    job.refresh_from_db()
    assert job.progress == 100 and job.status == Job.Status.SUCCEEDED
    run = ArenaRun.objects.get(job=job)
    assert ArenaRun.objects.count() == 1
    assert [r["strategy"] for r in run.report["results"]] == ["layered", "triage"]
