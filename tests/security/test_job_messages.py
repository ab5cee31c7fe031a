"""Finding 5: a job's ``message`` was shown to players and counted private turns
("4 digest(s) current"). A player polling a job now reads its status and progress."""

from __future__ import annotations

import pytest

from campaigns.models import Job

pytestmark = pytest.mark.django_db


def test_a_player_polling_a_job_reads_status_and_progress_only(api, campaign, owner, player):
    job = Job.objects.create(
        experiment=campaign,
        kind=Job.Kind.CHECKPOINT,
        status=Job.Status.SUCCEEDED,
        progress=100,
        message="4 digest(s) current; 3 whispers folded for DM",
        result={"digests": 4},
        user=owner,
    )

    as_player = api(player).get(f"/api/tasks/{job.pk}/").json()
    as_owner = api(owner).get(f"/api/tasks/{job.pk}/").json()

    assert as_player["message"] == "/checkpoint: succeeded"
    assert as_player["result"] is None
    assert as_player["progress"] == 100 and as_player["status"] == "succeeded"
    assert as_owner["message"] == job.message
    assert as_owner["result"] == {"digests": 4}


def test_a_running_job_shows_players_its_progress(api, campaign, player):
    job = Job.objects.create(
        experiment=campaign,
        kind=Job.Kind.ROUND,
        status=Job.Status.RUNNING,
        progress=40,
        message="Round 3: Cassia whispers to the DM",
    )

    body = api(player).get(f"/api/tasks/{job.pk}/").json()

    assert body["message"] == "Round: running, 40%"
    assert "Cassia" not in str(body)
