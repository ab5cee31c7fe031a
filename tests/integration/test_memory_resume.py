"""A long /checkpoint is a chain of short steps; a worker killed mid-job loses nothing.

Real PostgreSQL, real Redis, real Celery worker processes. The first worker is killed
(SIGKILL, no warm shutdown) while the job is part-way through the World Bible; the
job's message is then delivered again (as the broker does for an unacknowledged
late-acked task once its visibility timeout passes) to a fresh worker, which resumes
after the hydration cursor. The result equals an uninterrupted run in this process.
"""

from __future__ import annotations

import pytest

from campaigns import tasks
from campaigns.models import HydrationCursor, Job, LoreEntry, Turn, VocabularyStat
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.memory import hydrate_experiment, run_command
from tests.factories import make_user
from tests.integration.test_memory_worker import default_queue
from tests.integration.worker import PROCESSES, celery_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

TURNS = 1500
BATCH = 100


def long_campaign(name: str):
    experiment = experiment_create(owner=make_user(), name=name, hook="A long campaign.")
    participant_create(experiment=experiment, role="DM", kind="dm")
    participant_create(experiment=experiment, role="Thorin", kind="player")
    Turn.objects.bulk_create(
        Turn(
            experiment=experiment,
            round=index // 10,
            seq=index + 1,
            speaker="DM",
            kind="narrative",
            content=(
                f"Captain Vorn{index % 37:02d} sails to Port Ash{index % 23:02d}. "
                f"In Port Ash{index % 23:02d} the tide-bells ring for Vorn{index % 37:02d}."
            ),
            visibility=None if index % 5 else ["Thorin", "DM"],
        )
        for index in range(TURNS)
    )
    return experiment


def snapshot(experiment):
    stats = sorted(
        VocabularyStat.objects.filter(experiment=experiment).values_list(
            "audience_key", "key", "mentions", "turns", "mid"
        )
    )
    entries = sorted(
        LoreEntry.objects.filter(experiment=experiment).values_list(
            "audience_key", "key", "mention_count", "first_seen_round", "last_seen_round"
        )
    )
    return stats, entries


def test_a_checkpoint_resumes_after_its_worker_is_killed(real_services, settings):
    settings.BABEL_HYDRATE_BATCH_TURNS = BATCH
    env = {"BABEL_HYDRATE_BATCH_TURNS": str(BATCH)}
    interrupted = long_campaign("interrupted")
    with celery_worker(real_services, extra_env=env) as queue, default_queue(queue):
        job = run_command(experiment=interrupted, command="checkpoint", user=None)

        def part_way():
            cursor = HydrationCursor.objects.filter(experiment=interrupted).first()
            return cursor is not None and BATCH <= cursor.seq < TURNS - 3 * BATCH

        wait_for(part_way, timeout=120, interval=0.05)
        PROCESSES[queue].kill()  # SIGKILL: the step in flight is never acknowledged
        PROCESSES[queue].wait(timeout=20)
    cut = HydrationCursor.objects.get(experiment=interrupted).seq
    assert Job.objects.get(pk=job.pk).status == Job.Status.RUNNING
    assert 0 < cut < TURNS

    with celery_worker(real_services, extra_env=env) as queue:
        tasks.run_memory_job.apply_async(args=[str(job.pk)], queue=queue)  # redelivery
        wait_for(
            lambda: Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED,
            timeout=180,
            interval=0.2,
        )
    done = Job.objects.get(pk=job.pk)
    assert done.progress == 100 and done.result["lore"]["turns"] >= TURNS - cut
    assert HydrationCursor.objects.get(experiment=interrupted).seq == TURNS

    whole = long_campaign("whole")
    hydrate_experiment(experiment=whole)
    assert snapshot(interrupted) == snapshot(whole)
    assert snapshot(whole)[1], "the campaign has lore"
