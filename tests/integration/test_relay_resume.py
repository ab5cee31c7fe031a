"""A round whose worker is killed mid-step resumes on another worker, each step stored
exactly once (issue 11). Real PostgreSQL, real Redis, real Celery worker processes, the
real google-genai SDK against the Gemini stand-in, which is slow on Cassia's step: the
first worker is SIGKILLed while waiting for that answer (no warm shutdown, nothing
acknowledged), then `round_start` finds the round stale and a second worker resumes it
from the first step not stored."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from campaigns.models import Job, RoundStep, Turn
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import round_start
from tests.campaigns.services.test_relay_models import (
    CASSIA_ACTS,
    DM_ANSWERS,
    DM_NARRATION,
    MODEL,
    THORIN_ACTS,
)
from tests.integration.test_memory_worker import default_queue, gemini_env
from tests.integration.worker import PROCESSES, celery_worker, wait_for
from tests.standins.server import Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def test_a_round_killed_mid_step_resumes_on_another_worker_with_every_step_once(
    real_services, campaign, owner, gemini_standin, settings
):
    campaign.participants.update(model=MODEL)
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    gemini_standin.slow_seconds = 600  # Cassia's first answer never comes
    gemini_standin.script(
        [Reply(DM_NARRATION), Reply(THORIN_ACTS), "slow", Reply(CASSIA_ACTS), Reply(DM_ANSWERS)]
    )
    env = gemini_env(gemini_standin, timeout=900)

    with celery_worker(real_services, extra_env=env) as queue, default_queue(queue):
        job = round_start(experiment=campaign, user=owner)
        wait_for(lambda: len(gemini_standin.calls) == 3, timeout=120, interval=0.05)
        assert RoundStep.objects.filter(experiment=campaign).count() == 2
        PROCESSES[queue].kill()  # SIGKILL, inside Cassia's model call
        PROCESSES[queue].wait(timeout=20)

    job.refresh_from_db()
    assert job.status == "running" and "Cassia" in job.message
    before = list(Turn.objects.filter(experiment=campaign).values_list("pk", flat=True))
    assert {"DM", "Thorin"} == set(
        Turn.objects.filter(pk__in=before).values_list("speaker", flat=True)
    )

    settings.BABEL_ROUND_STALE_S = 1  # this process decides the round is stale
    time.sleep(1.2)
    with celery_worker(real_services, extra_env=env) as queue, default_queue(queue):
        resumed = round_start(experiment=campaign, user=owner)
        assert resumed.pk == job.pk and resumed.status == "pending"
        wait_for(lambda: Job.objects.get(pk=job.pk).status in ("succeeded", "failed"), timeout=120)

    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    rows = list(RoundStep.objects.filter(experiment=campaign).order_by("id"))
    assert [(r.step, r.speaker, r.status) for r in rows] == [
        ("narrate", "DM", "ok"),
        ("act", "Thorin", "ok"),
        ("act", "Cassia", "ok"),
        ("answer", "DM", "ok"),
    ]
    claimed = Counter(pk for r in rows for pk in r.turns)
    turns = set(Turn.objects.filter(experiment=campaign).values_list("pk", flat=True))
    assert set(claimed.values()) == {1} and set(claimed) == turns, "each turn in one step"
    assert set(before) <= turns, "nothing stored before the kill was lost"
    kinds = Counter(Turn.objects.filter(experiment=campaign).values_list("speaker", "kind"))
    assert kinds[("Cassia", "action")] == 1
    assert kinds[("DM", "narrative")] == 1 and kinds[("Thorin", "action")] == 1
    assert len(gemini_standin.calls) == 5, "Cassia was asked again, nobody else was"
    assert [s["role"] for s in job.result["steps"]] == ["DM", "Thorin", "Cassia", "DM"]
