"""Every relay step has an idempotency key (experiment, round, step, speaker): a round
re-run after its worker died resumes from the first step not stored, and a step
committed twice (two runs racing) is stored once. Humans who do not act in time are
handled by ``config.human_timeout_policy``."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from campaigns import tasks
from campaigns.models import Job, RoundStep, Turn
from campaigns.reads.selectors import turns_visible_to, viewer_for_role
from campaigns.services import relay
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import human_timeout, human_turn_create, round_create, round_run
from campaigns.services.relay.runner import _Round

pytestmark = pytest.mark.django_db


class WorkerDied(BaseException):
    """What SIGKILL looks like from inside: nothing after this line runs."""


def offline(campaign, *, human=()):
    campaign.participants.update(model="offline")
    campaign.participants.filter(role__in=human).update(model="human")
    return campaign


def step_turns(experiment):
    """Every stored step's turn ids, and how often each turn id is claimed."""
    rows = RoundStep.objects.filter(experiment=experiment)
    return Counter(pk for row in rows for pk in row.turns)


def age(job):
    Job.objects.filter(pk=job.pk).update(
        updated_at=timezone.now() - relay.stale_after() - timedelta(seconds=1)
    )


def test_a_round_whose_worker_died_between_the_model_call_and_the_commit_resumes(
    campaign, owner, monkeypatch
):
    offline(campaign)
    real_commit = _Round._commit
    calls = []

    def die_on_the_third_step(self, step, *args, **kwargs):
        calls.append(step.role)
        if len(calls) == 3:
            raise WorkerDied  # Cassia's answer came back; the commit never happened
        return real_commit(self, step, *args, **kwargs)

    monkeypatch.setattr(_Round, "_commit", die_on_the_third_step)
    job = round_create(experiment=campaign, user=owner)
    with pytest.raises(WorkerDied):
        round_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "running"
    assert list(RoundStep.objects.values_list("step", "speaker")) == [
        ("narrate", "DM"),
        ("act", "Thorin"),
    ]
    before = set(Turn.objects.filter(experiment=campaign).values_list("pk", flat=True))

    assert round_run(job_id=job.pk).status == "running", "a live run is not taken over"
    age(job)
    done = round_run(job_id=job.pk)

    assert done.status == "succeeded", done.message
    assert done.result["round"] == 1
    keys = list(RoundStep.objects.values_list("step", "speaker"))
    assert keys == [("narrate", "DM"), ("act", "Thorin"), ("act", "Cassia"), ("answer", "DM")]
    claimed = step_turns(campaign)
    assert set(claimed.values()) == {1}, "no turn belongs to two steps"
    assert set(claimed) == set(
        Turn.objects.filter(experiment=campaign).values_list("pk", flat=True)
    )
    assert before <= set(claimed), "the turns stored before the crash are kept"
    kinds = Counter(Turn.objects.filter(experiment=campaign).values_list("speaker", "kind"))
    assert kinds[("Cassia", "action")] == 1 and kinds[("Thorin", "action")] == 1
    assert kinds[("DM", "narrative")] == 1


def test_round_start_on_a_dead_workers_round_resumes_that_round(
    campaign, owner, monkeypatch, django_capture_on_commit_callbacks
):
    offline(campaign)
    real_ask = _Round._ask

    def die_at_cassia(self, step, participant):
        if participant.role == "Cassia":
            raise WorkerDied
        return real_ask(self, step, participant)

    monkeypatch.setattr(_Round, "_ask", die_at_cassia)
    job = round_create(experiment=campaign, user=owner)
    with pytest.raises(WorkerDied):
        round_run(job_id=job.pk)
    monkeypatch.setattr(_Round, "_ask", real_ask)
    age(job)
    with django_capture_on_commit_callbacks(execute=True):
        resumed = relay.round_start(experiment=campaign, user=owner)
    resumed.refresh_from_db()
    assert resumed.pk == job.pk
    assert resumed.status == "succeeded"
    assert campaign.jobs.count() == 1
    assert RoundStep.objects.filter(experiment=campaign).count() == 4


def test_a_step_committed_by_two_racing_runs_is_stored_once(campaign, owner, monkeypatch):
    offline(campaign)
    job = round_create(experiment=campaign, user=owner)
    real_ask = _Round._ask
    raced = []

    def another_run_stores_cassia_first(self, step, participant):
        answer = real_ask(self, step, participant)
        if participant.role == "Cassia" and not raced:
            raced.append(True)
            rival = _Round(Job.objects.get(pk=job.pk), None)
            rival._step(step, participant)  # the rival commits Cassia's step now
        return answer

    monkeypatch.setattr(_Round, "_ask", another_run_stores_cassia_first)
    done = round_run(job_id=job.pk)
    assert raced and done.status == "succeeded"
    cassia = Turn.objects.filter(experiment=campaign, speaker="Cassia")
    assert Counter(cassia.values_list("kind", flat=True))["action"] == 1
    assert RoundStep.objects.filter(experiment=campaign, speaker="Cassia").count() == 1
    assert set(step_turns(campaign).values()) == {1}


def test_the_key_is_a_database_constraint(campaign):
    RoundStep.objects.create(
        experiment=campaign, round=1, step="act", speaker="Thorin", status="ok"
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        RoundStep.objects.create(
            experiment=campaign, round=1, step="act", speaker="Thorin", status="ok"
        )


def test_running_a_finished_round_again_changes_nothing(campaign, owner):
    offline(campaign)
    job = round_create(experiment=campaign, user=owner)
    round_run(job_id=job.pk)
    turns = Turn.objects.count()
    Job.objects.filter(pk=job.pk).update(status="pending")  # a replayed message, say
    again = round_run(job_id=job.pk)
    assert again.status == "succeeded"
    assert Turn.objects.count() == turns
    assert [s["role"] for s in again.result["steps"]] == ["DM", "Thorin", "Cassia", "DM"]


def test_a_human_who_posted_before_the_round_reached_them_has_acted(
    campaign, owner, player, monkeypatch
):
    offline(campaign, human=("Cassia",))
    real_commit = _Round._commit

    def cassia_posts_once_thorin_acted(self, step, *args, **kwargs):
        stored = real_commit(self, step, *args, **kwargs)
        if step.role == "Thorin":
            human_turn_create(
                experiment=campaign, user=owner, speaker="Cassia", kind="action", content="I go."
            )
        return stored

    monkeypatch.setattr(_Round, "_commit", cassia_posts_once_thorin_acted)
    job = round_create(experiment=campaign, user=owner)
    done = round_run(job_id=job.pk)
    assert done.status == "succeeded", done.message
    cassia = next(s for s in done.result["steps"] if s["role"] == "Cassia")
    assert (cassia["status"], cassia["model"]) == ("ok", "human")


# -- a human who does not act in time --------------------------------------------------


@pytest.fixture
def waiting(campaign, owner, player):
    """Model DM and Cassia; the round waits for Thorin, who may take 60 seconds."""
    offline(campaign, human=("Thorin",))
    job = round_create(experiment=campaign, user=owner)
    experiment_update(experiment=campaign, config={"human_timeout_s": 60})
    job = round_run(job_id=job.pk)
    assert job.status == "waiting"
    return job


def later(job, seconds=61):
    """``seconds`` after the round started waiting (a day from now once it stopped)."""
    if "waiting" not in job.result:
        return timezone.now() + timedelta(days=1)
    since = timezone.datetime.fromisoformat(job.result["waiting"]["since"])
    return since + timedelta(seconds=seconds)


def run_timeout(job, capture, *, seconds=61):
    with capture(execute=True):
        outcome = human_timeout(
            job_id=job.pk, round_=1, step="act", role="Thorin", now=later(job, seconds)
        )
    job.refresh_from_db()
    return outcome


def test_before_the_timeout_nothing_happens(waiting, django_capture_on_commit_callbacks):
    assert run_timeout(waiting, django_capture_on_commit_callbacks, seconds=59) == "not yet"
    assert waiting.status == "waiting"


def test_skip_policy_leaves_a_note_the_dm_reads_and_the_round_goes_on(
    waiting, campaign, django_capture_on_commit_callbacks
):
    assert run_timeout(waiting, django_capture_on_commit_callbacks) == "skipped"
    assert waiting.status == "succeeded", waiting.message
    assert "did not act in time: Thorin" in waiting.message
    assert "skipped by the DM" not in waiting.message
    note = Turn.objects.get(experiment=campaign, kind="system")
    assert note.visibility == ["DM"] and "Thorin did not act within 60 s" in note.content
    thorin = next(s for s in waiting.result["steps"] if s["role"] == "Thorin")
    assert (thorin["status"], thorin["turns"]) == ("timed_out", [note.pk])
    assert not turns_visible_to(
        experiment=campaign, viewer=viewer_for_role(experiment=campaign, role="Thorin")
    ).filter(pk=note.pk)
    assert [s["role"] for s in waiting.result["steps"]] == ["DM", "Thorin", "Cassia", "DM"]


def test_narrate_policy_has_the_dm_agent_narrate_the_hesitation(
    waiting, campaign, django_capture_on_commit_callbacks
):
    experiment_update(
        experiment=campaign, config={"human_timeout_s": 60, "human_timeout_policy": "narrate"}
    )
    assert run_timeout(waiting, django_capture_on_commit_callbacks) == "narrated"
    assert waiting.status == "succeeded"
    thorin = next(s for s in waiting.result["steps"] if s["role"] == "Thorin")
    narration = Turn.objects.get(pk=thorin["turns"][0])
    assert (narration.speaker, narration.kind, narration.visibility) == ("DM", "narrative", None)
    assert "Thorin hesitates" in narration.content
    assert not Turn.objects.filter(experiment=campaign, kind="system").exists()


def test_a_timeout_after_the_human_acted_does_nothing(
    waiting, campaign, player, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        human_turn_create(
            experiment=campaign, user=player, speaker="Thorin", kind="action", content="I go."
        )
    waiting.refresh_from_db()
    assert waiting.status == "succeeded"
    assert run_timeout(waiting, django_capture_on_commit_callbacks) == "not waiting"
    assert not Turn.objects.filter(experiment=campaign, kind="system").exists()


def test_the_human_acting_after_the_timeout_is_just_a_turn(
    waiting, campaign, player, django_capture_on_commit_callbacks
):
    run_timeout(waiting, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        late = human_turn_create(
            experiment=campaign, user=player, speaker="Thorin", kind="action", content="Late!"
        )
    assert late.pk not in step_turns(campaign)
    assert RoundStep.objects.get(experiment=campaign, speaker="Thorin").status == "timed_out"


def test_a_human_dm_who_times_out_under_narrate_gets_the_note(
    campaign, owner, django_capture_on_commit_callbacks
):
    offline(campaign, human=("DM",))
    experiment_update(
        experiment=campaign, config={"human_timeout_s": 10, "human_timeout_policy": "narrate"}
    )
    job = round_run(job_id=round_create(experiment=campaign, user=owner).pk)
    with django_capture_on_commit_callbacks(execute=True):
        outcome = human_timeout(
            job_id=job.pk, round_=1, step="narrate", role="DM", now=later(job, 11)
        )
    assert outcome == "skipped"
    job.refresh_from_db()
    assert job.result["steps"][0]["status"] == "timed_out"
    assert job.status in ("waiting", "succeeded")


def test_waiting_schedules_the_timeout_task_with_its_countdown(
    campaign, owner, monkeypatch, django_capture_on_commit_callbacks
):
    offline(campaign, human=("Thorin",))
    experiment_update(experiment=campaign, config={"human_timeout_s": 90})
    sent = []
    monkeypatch.setattr(
        tasks.human_timeout, "apply_async", lambda args, countdown: sent.append((args, countdown))
    )
    job = round_create(experiment=campaign, user=owner)
    conf = tasks.run_round.app.conf
    conf.task_always_eager = False  # a real broker: the countdown is sent
    try:
        with django_capture_on_commit_callbacks(execute=True):
            round_run(job_id=job.pk)
            assert sent == [], "sent after commit only"
    finally:
        conf.task_always_eager = True
    assert sent == [((str(job.pk), 1, "act", "Thorin"), 90)]


def test_with_no_broker_no_timeout_fires_at_once(
    campaign, owner, django_capture_on_commit_callbacks
):
    offline(campaign, human=("Thorin",))
    experiment_update(experiment=campaign, config={"human_timeout_s": 90})
    with django_capture_on_commit_callbacks(execute=True):
        job = relay.round_start(experiment=campaign, user=owner)
    job.refresh_from_db()
    assert job.status == "waiting" and not RoundStep.objects.filter(speaker="Thorin").exists()


def test_the_timeout_task_for_a_job_that_is_gone_does_nothing():
    assert tasks.human_timeout("00000000-0000-0000-0000-000000000000", 1, "act", "X") is None
