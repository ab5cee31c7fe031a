"""The relay (SPEC §6): rounds with offline agents on the demo campaign, one round at a
time, progress on the Job, and the run_round task and run_campaign command."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from itertools import groupby

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import DatabaseError
from django.utils import timezone

from campaigns import demo
from campaigns.models import Job, Turn
from campaigns.reads.selectors import current_round, turns_visible_to, viewer_for_role
from campaigns.services import relay, transcripts
from campaigns.services.relay import round_create, round_run, round_start, steps
from campaigns.tasks import run_round
from tests.campaigns.services.memory_support import leaks
from tests.factories import make_experiment, make_turn

pytestmark = pytest.mark.django_db

DEMO_PLAYERS = ("Thorin", "Cassia", "Wren")


@pytest.fixture
def demo_campaign(owner):
    return transcripts.import_transcript(data=demo.transcript(), owner=owner)


def play(experiment, user, capture):
    """Start a round as the API does; with no broker Celery runs it after commit."""
    with capture(execute=True):
        job = round_start(experiment=experiment, user=user)
    job.refresh_from_db()
    return job


def round_turns(experiment, number):
    return list(Turn.objects.filter(experiment=experiment, round=number).order_by("seq"))


def speakers_in_order(turns):
    return [speaker for speaker, _ in groupby(t.speaker for t in turns)]


# -- a round with offline agents -------------------------------------------------------


def test_an_offline_round_stores_dm_then_each_player_in_order_then_dm_answers(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    before = current_round(experiment=demo_campaign)
    job = play(demo_campaign, owner, django_capture_on_commit_callbacks)

    assert (job.kind, job.status, job.progress) == ("round", "succeeded", 100)
    assert job.result["round"] == before + 1
    turns = round_turns(demo_campaign, before + 1)
    assert speakers_in_order(turns) == ["DM", *DEMO_PLAYERS, "DM"]
    assert [s["status"] for s in job.result["steps"]] == ["ok"] * 5
    assert sorted(pk for s in job.result["steps"] for pk in s["turns"]) == [t.pk for t in turns]
    assert not any(t.needs_review for t in turns)


def test_an_offline_round_gives_every_turn_the_visibility_its_kind_demands(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    job = play(demo_campaign, owner, django_capture_on_commit_callbacks)
    turns = round_turns(demo_campaign, job.result["round"])
    narration, answers = [], []
    for turn in turns:
        if turn.speaker == "DM" and turn.kind in ("narrative", "choice"):
            assert turn.visibility is None
            narration.append(turn)
        elif turn.kind == "gm_note":
            assert (turn.speaker, turn.visibility) == ("DM", ["DM"])
        elif turn.kind == "action":
            assert turn.visibility is None
        elif turn.kind == "monologue":
            assert turn.visibility == [turn.speaker]
        elif turn.kind == "whisper" and turn.speaker != "DM":
            assert turn.visibility == sorted([turn.speaker, "DM"])
        elif turn.kind == "whisper":
            answers.append(turn.visibility)
        else:
            pytest.fail(f"unexpected turn {turn}")
    assert narration, "the DM narrated in public"
    whisperers = {t.speaker for t in turns if t.kind == "whisper" and t.speaker != "DM"}
    assert sorted(answers) == sorted(sorted(["DM", p]) for p in whisperers)
    assert whisperers == set(DEMO_PLAYERS)


def test_a_players_whispers_and_monologues_never_reach_another_player(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    play(demo_campaign, owner, django_capture_on_commit_callbacks)
    play(demo_campaign, owner, django_capture_on_commit_callbacks)
    for role in DEMO_PLAYERS:
        viewer = viewer_for_role(experiment=demo_campaign, role=role)
        for turn in turns_visible_to(experiment=demo_campaign, viewer=viewer):
            if turn.kind in ("whisper", "monologue"):
                assert role in turn.visibility, (role, turn)
        assert leaks(demo_campaign, role) == [], role


def test_rounds_number_on_from_the_current_maximum(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    start = current_round(experiment=demo_campaign)
    first = play(demo_campaign, owner, django_capture_on_commit_callbacks)
    second = play(demo_campaign, owner, django_capture_on_commit_callbacks)
    assert (first.result["round"], second.result["round"]) == (start + 1, start + 2)
    assert current_round(experiment=demo_campaign) == start + 2


def test_offline_rounds_are_deterministic(owner, django_capture_on_commit_callbacks):
    contents = []
    for _ in range(2):
        experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
        job = play(experiment, owner, django_capture_on_commit_callbacks)
        contents.append(
            [
                (t.speaker, t.kind, t.content, t.visibility)
                for t in round_turns(experiment, job.result["round"])
            ]
        )
    assert contents[0] == contents[1]


def test_progress_is_reported_per_step_while_the_job_runs(demo_campaign, owner):
    job = round_create(experiment=demo_campaign, user=owner)
    assert (job.status, job.progress) == ("pending", 0)
    seen = []

    def on_progress(percent, message):
        seen.append((percent, message, Job.objects.get(pk=job.pk).status))

    round_run(job_id=job.pk, on_progress=on_progress)
    number = Job.objects.get(pk=job.pk).result["round"]
    assert [m for _, m, _ in seen] == [
        f"Round {number}: DM narrating…",
        f"Round {number}: Thorin acting…",
        f"Round {number}: Cassia acting…",
        f"Round {number}: Wren acting…",
        f"Round {number}: DM answering whispers…",
        f"Round {number} done: {Turn.objects.filter(round=number).count()} turn(s) from 5 step(s)",
    ]
    percents = [p for p, _, _ in seen]
    assert percents == sorted(percents) and percents[0] == 0 and percents[-1] == 100
    assert all(status == "running" for p, _, status in seen if p < 100)
    job.refresh_from_db()
    assert (job.status, job.progress, job.message) == ("succeeded", 100, seen[-1][1])


# -- failures and fallbacks (offline) --------------------------------------------------


def test_a_step_that_fails_while_storing_leaves_none_of_its_turns(
    demo_campaign, owner, monkeypatch, django_capture_on_commit_callbacks
):
    real_turn_create = steps.turn_create
    calls = {"Thorin": 0}

    def flaky_turn_create(**fields):
        if fields["speaker"] == "Thorin":
            calls["Thorin"] += 1
            if calls["Thorin"] == 2:  # the whisper, after the public action was written
                raise DatabaseError("disk full (injected)")
        return real_turn_create(**fields)

    monkeypatch.setattr(steps, "turn_create", flaky_turn_create)
    existing = list(Turn.objects.filter(experiment=demo_campaign).values_list("pk", "content"))
    job = play(demo_campaign, owner, django_capture_on_commit_callbacks)

    turns = round_turns(demo_campaign, job.result["round"])
    assert calls["Thorin"] == 2
    assert [t for t in turns if t.speaker == "Thorin"] == [], "not even the first turn"
    failure = [t for t in turns if t.kind == "system"]
    assert len(failure) == 1
    assert (failure[0].speaker, failure[0].visibility) == ("DM", ["DM"])
    assert "Thorin" in failure[0].content and "disk full" in failure[0].content
    assert speakers_in_order(turns) == ["DM", "Cassia", "Wren", "DM"]
    assert [(s["role"], s["status"]) for s in job.result["steps"]] == [
        ("DM", "ok"),
        ("Thorin", "failed"),
        ("Cassia", "ok"),
        ("Wren", "ok"),
        ("DM", "ok"),
    ]
    assert job.status == "succeeded" and "Thorin" in job.message
    still = dict(Turn.objects.filter(experiment=demo_campaign).values_list("pk", "content"))
    assert all(still.get(pk) == content for pk, content in existing), "no turn lost"


def test_an_unknown_model_id_is_a_failed_step_the_dm_can_read(
    campaign, owner, django_capture_on_commit_callbacks
):
    campaign.participants.update(model="offline")
    campaign.participants.filter(role="Cassia").update(model="claude-9")
    job = play(campaign, owner, django_capture_on_commit_callbacks)
    turns = round_turns(campaign, job.result["round"])
    failure = next(t for t in turns if t.kind == "system")
    assert failure.visibility == ["DM"] and "claude-9" in failure.content
    assert not [t for t in turns if t.speaker == "Cassia"]
    assert job.status == "succeeded"


def test_a_human_player_makes_the_round_wait_and_models_before_them_still_play(
    campaign, owner, django_capture_on_commit_callbacks
):
    campaign.participants.exclude(role="Thorin").update(model="offline")  # Thorin: human
    job = play(campaign, owner, django_capture_on_commit_callbacks)
    turns = round_turns(campaign, job.result["round"])
    assert speakers_in_order(turns) == ["DM"]
    assert job.status == "waiting" and job.message == "Round 1: waiting for Thorin"
    assert [s["role"] for s in job.result["steps"]] == ["DM"]


def test_the_answer_step_is_skipped_when_nobody_whispered(
    campaign, owner, monkeypatch, django_capture_on_commit_callbacks
):
    campaign.participants.update(model="offline")
    real_parse = steps.parse_agent_output

    def no_whispers(text, **kw):
        return [t for t in real_parse(text, **kw) if t.kind != "whisper"]

    monkeypatch.setattr(steps, "parse_agent_output", no_whispers)
    job = play(campaign, owner, django_capture_on_commit_callbacks)
    assert job.result["steps"][-1] == {
        "step": "answer",
        "role": "DM",
        "model": "offline",
        "status": "skipped",
        "turns": [],
        "reason": "no whispers to answer",
    }
    assert job.status == "succeeded"


def test_content_over_the_limit_is_cut_and_says_so(
    campaign, owner, settings, django_capture_on_commit_callbacks
):
    settings.BABEL_MAX_CONTENT_CHARS = 70
    campaign.participants.update(model="offline")
    job = play(campaign, owner, django_capture_on_commit_callbacks)
    turns = round_turns(campaign, job.result["round"])
    assert turns and all(len(t.content) <= 70 for t in turns)
    cut = [t for t in turns if "[cut by the relay:" in t.content]
    assert cut, "the offline narration is longer than 70 characters"
    assert job.status == "succeeded"


# -- starting rounds: validation and one at a time --------------------------------------


def test_a_draft_campaign_is_running_once_its_first_round_starts(owner):
    experiment = make_experiment(owner=owner)
    experiment.participants.update(model="offline")
    assert experiment.status == "draft"
    round_create(experiment=experiment, user=owner)
    experiment.refresh_from_db()
    assert experiment.status == "running"


def test_starting_a_round_keeps_a_status_the_owner_set(owner):
    experiment = make_experiment(owner=owner, status="paused")
    experiment.participants.update(model="offline")
    round_create(experiment=experiment, user=owner)
    experiment.refresh_from_db()
    assert experiment.status == "paused"


def test_a_second_start_while_a_round_is_pending_is_refused(demo_campaign, owner):
    first = round_create(experiment=demo_campaign, user=owner)
    with pytest.raises(ValidationError) as caught:
        round_start(experiment=demo_campaign, user=owner)
    assert caught.value.message_dict == {"round": ["A round is already running."]}
    assert list(Job.objects.filter(experiment=demo_campaign)) == [first]


def test_a_second_start_while_a_round_is_running_is_refused(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    errors = []

    def start_again(percent, message):
        if "Thorin" in message:
            try:
                round_create(experiment=demo_campaign, user=owner)
            except ValidationError as exc:
                errors.append(exc.message_dict)

    job = round_create(experiment=demo_campaign, user=owner)
    round_run(job_id=job.pk, on_progress=start_again)
    assert errors == [{"round": ["A round is already running."]}]
    assert Job.objects.filter(experiment=demo_campaign).count() == 1
    # Once it finished, the next round may start.
    assert play(demo_campaign, owner, django_capture_on_commit_callbacks).status == "succeeded"


def test_a_round_job_abandoned_by_a_dead_worker_is_resumed_not_duplicated(demo_campaign, owner):
    stale = round_create(experiment=demo_campaign, user=owner)
    Job.objects.filter(pk=stale.pk).update(
        status="running", updated_at=timezone.now() - relay.stale_after() - timedelta(seconds=5)
    )
    again = round_create(experiment=demo_campaign, user=owner)
    assert again.pk == stale.pk
    assert again.status == "pending" and "Resuming" in again.message
    assert Job.objects.filter(experiment=demo_campaign).count() == 1


def test_other_experiments_rounds_do_not_block(demo_campaign, owner):
    other = transcripts.import_transcript(data=demo.transcript(), owner=owner)
    round_create(experiment=demo_campaign, user=owner)
    assert round_create(experiment=other, user=owner).status == "pending"


def test_a_round_needs_a_dm(owner):
    experiment = make_experiment(owner=owner, roles=("Thorin", "Cassia"))
    experiment.participants.update(model="offline")
    with pytest.raises(ValidationError) as caught:
        round_start(experiment=experiment, user=owner)
    assert caught.value.message_dict == {
        "round": ["The experiment needs a DM participant to run a round."]
    }
    assert not Job.objects.filter(experiment=experiment).exists()


def test_a_round_with_only_humans_is_refused(campaign, owner):
    with pytest.raises(ValidationError) as caught:
        round_start(experiment=campaign, user=owner)
    assert "human" in caught.value.message_dict["round"][0]
    assert not Job.objects.filter(experiment=campaign).exists()


def test_the_task_is_sent_only_after_commit(
    demo_campaign, owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = round_start(experiment=demo_campaign, user=owner)
    assert len(callbacks) == 1
    job.refresh_from_db()
    assert job.status == "pending"
    assert not Turn.objects.filter(experiment=demo_campaign, round__gt=13).exists()
    callbacks[0]()
    job.refresh_from_db()
    assert job.status == "succeeded"


# -- the task: re-fetch, return quietly, never run a claimed job twice -------------------


def test_running_a_round_job_twice_plays_it_once(demo_campaign, owner):
    job = round_create(experiment=demo_campaign, user=owner)
    assert run_round.apply(args=[str(job.pk)]).get() == "succeeded"
    count = Turn.objects.filter(experiment=demo_campaign).count()
    assert run_round.apply(args=[str(job.pk)]).get() == "succeeded"
    assert round_run(job_id=job.pk).status == "succeeded"
    assert Turn.objects.filter(experiment=demo_campaign).count() == count


def test_the_task_returns_quietly_for_a_job_that_is_gone(demo_campaign, owner):
    job = round_create(experiment=demo_campaign, user=owner)
    job_id = str(job.pk)
    job.delete()
    before = Turn.objects.count()
    assert run_round.apply(args=[job_id]).get() is None
    assert round_run(job_id=job_id) is None
    assert Turn.objects.count() == before


def test_a_job_of_another_kind_is_not_run_as_a_round(demo_campaign, owner):
    job = Job.objects.create(experiment=demo_campaign, kind="checkpoint")
    assert run_round.apply(args=[str(job.pk)]).get() is None
    job.refresh_from_db()
    assert job.status == "pending"


def test_an_unexpected_error_fails_the_job_with_its_message(demo_campaign, owner, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("pack store offline")

    monkeypatch.setattr(steps, "pack_for_role", broken)
    job = round_run(job_id=round_create(experiment=demo_campaign, user=owner).pk)
    assert job.status == "failed" and "pack store offline" in job.message


# -- manage.py run_campaign --------------------------------------------------------------


def test_run_campaign_plays_rounds_and_prints_progress(demo_campaign):
    start = current_round(experiment=demo_campaign)
    out = StringIO()
    call_command("run_campaign", str(demo_campaign.pk), "--rounds", "2", stdout=out)
    text = out.getvalue()
    assert f"Round {start + 1}: Thorin acting…" in text
    assert f"Round {start + 2}: DM answering whispers…" in text
    assert "Played 2 round(s)." in text
    assert current_round(experiment=demo_campaign) == start + 2
    jobs = Job.objects.filter(experiment=demo_campaign, kind="round")
    assert sorted(j.status for j in jobs) == ["succeeded", "succeeded"]


def test_run_campaign_refuses_bad_arguments(demo_campaign):
    with pytest.raises(CommandError, match="No experiment with id 999999"):
        call_command("run_campaign", "999999", stdout=StringIO())
    with pytest.raises(CommandError, match="at least 1"):
        call_command("run_campaign", str(demo_campaign.pk), "--rounds", "0", stdout=StringIO())
    assert not Job.objects.exists()


def test_run_campaign_stops_when_a_round_cannot_start(demo_campaign, owner):
    round_create(experiment=demo_campaign, user=owner)
    with pytest.raises(CommandError, match=r"A round is already running\."):
        call_command("run_campaign", str(demo_campaign.pk), stdout=StringIO())


def test_run_campaign_stops_at_a_round_that_waits_for_a_human(campaign):
    campaign.participants.exclude(role="Cassia").update(model="offline")  # Cassia: human
    with pytest.raises(CommandError, match=r"Round 1 of 2 waits for a human \(Round 1: waiting"):
        call_command("run_campaign", str(campaign.pk), "--rounds", "2", stdout=StringIO())
    assert Job.objects.get(experiment=campaign).status == "waiting"


def test_run_campaign_fails_when_no_agent_could_act(campaign, settings):
    campaign.participants.update(model="claude-9")
    with pytest.raises(CommandError, match="no agent could act"):
        call_command("run_campaign", str(campaign.pk), "--rounds", "3", stdout=StringIO())
    assert Job.objects.filter(experiment=campaign).count() == 1
    system = Turn.objects.filter(experiment=campaign, kind="system")
    assert system.count() == 3 and all(t.visibility == ["DM"] for t in system)


def test_make_turn_before_a_round_is_kept(campaign, owner, django_capture_on_commit_callbacks):
    campaign.participants.update(model="offline")
    setup = make_turn(campaign, round=0, content="The tide is out.")
    job = play(campaign, owner, django_capture_on_commit_callbacks)
    assert job.result["round"] == 1
    assert Turn.objects.get(pk=setup.pk).content == "The tide is out."
