"""Memory tasks: ids in, rows re-fetched, quiet when gone, sent only after commit."""

from __future__ import annotations

import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction

from campaigns import tasks
from campaigns.models import Job, LoreEntry, Summary
from campaigns.services.dispatch import _send
from campaigns.services.experiments import experiment_update
from campaigns.services.memory import run_command
from tests.factories import make_turn

pytestmark = pytest.mark.django_db

MEMORY_TASKS = ("hydrate_turn", "summarize_audience", "define_term", "run_memory_job")


@pytest.mark.parametrize("name", MEMORY_TASKS)
def test_memory_tasks_are_idempotent_late_acked_and_time_limited(name):
    task = getattr(tasks, name)
    assert task.acks_late is True
    assert 0 < task.soft_time_limit < task.time_limit <= 900


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("hydrate_turn", [987654]),
        ("summarize_audience", [987654, None, 3]),
        ("summarize_audience", [987654, ["Thorin"], 3]),
        ("define_term", [987654]),
        ("run_memory_job", [str(uuid.uuid4())]),
    ],
)
def test_a_task_for_a_row_that_is_gone_returns_quietly(name, args):
    assert getattr(tasks, name).apply(args=args).get() is None


def test_creating_a_turn_sends_the_hydrator_only_after_commit(
    campaign, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        make_turn(campaign, round=1, content="The Mirrorgate opens. Beyond the Mirrorgate, fog.")
    (hydrate,) = task_sends(callbacks)  # beside it: the live view's turn event
    assert not LoreEntry.objects.exists()
    hydrate()
    assert LoreEntry.objects.filter(term="Mirrorgate").exists()


def test_a_rolled_back_turn_sends_nothing(campaign, django_capture_on_commit_callbacks):
    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        make_turn(campaign, round=1, content="The Mirrorgate opens.")
        raise RuntimeError("the relay failed mid-round")
    assert callbacks == []
    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(ValidationError),
    ):
        make_turn(campaign, round=1, speaker="Nobody", content="Hello.")
    assert callbacks == []


def task_sends(callbacks) -> list:
    """The captured on-commit callbacks that send a task (not the live view's events)."""
    return [callback for callback in callbacks if getattr(callback, "func", None) is _send]


def sent(callbacks) -> list[tuple]:
    """The (task name, args) each captured on-commit task send sends."""
    return [(callback.args[0], callback.args[1]) for callback in task_sends(callbacks)]


def test_the_first_turn_of_a_round_asks_whether_the_last_round_makes_a_digest_due(
    campaign, django_capture_on_commit_callbacks
):
    experiment_update(experiment=campaign, config={"memory_interval": 2})
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        first = make_turn(campaign, round=0, content="Session zero.")
        make_turn(campaign, round=0, content="Everyone meets at the stair.")
    assert [name for name, _ in sent(callbacks)] == ["hydrate_turn", "hydrate_turn"]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        opening = make_turn(campaign, round=1, content="Rain.")
        make_turn(campaign, round=1, content="More rain.")
    assert sent(callbacks)[:2] == [
        ("hydrate_turn", (opening.pk,)),
        ("summarize_audience", (campaign.pk, None, 0)),  # round 0 just ended
    ]
    assert ("hydrate_turn", (first.pk,)) not in sent(callbacks)
    assert not Summary.objects.exists()  # one quiet round: not due yet
    with django_capture_on_commit_callbacks(execute=True):
        make_turn(campaign, round=2, content="Fog.")
    # Rounds 0-1 make an interval of 2: one digest per participant, each its own audience.
    digests = Summary.objects.order_by("audience_key")
    assert [(d.audience, d.round_to, d.kind) for d in digests] == [
        (["Cassia"], 1, "digest"),
        (["DM"], 1, "digest"),
        (["Thorin"], 1, "digest"),
    ]


def test_a_milestone_round_is_summarised_as_soon_as_it_ends(
    campaign, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        make_turn(
            campaign,
            round=1,
            content="Captain Idris Vane boards.",
            tags=["npc:Idris Vane"],
        )
        assert not Summary.objects.exists()
        make_turn(campaign, round=2, content="Morning.")
    digests = list(Summary.objects.all())
    assert len(digests) == 3, "one per participant"
    assert all(d.round_to == 1 and "Idris Vane" in d.text for d in digests)


def test_summarize_audience_for_every_audience_fans_out_one_task_per_audience(
    campaign, django_capture_on_commit_callbacks
):
    make_turn(campaign, round=1, content="Rain.", hinge=True)
    make_turn(
        campaign,
        round=1,
        speaker="Thorin",
        kind="whisper",
        content="Psst.",
        visibility=["Thorin", "DM"],
    )
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        result = tasks.summarize_audience.apply(args=[campaign.pk, None, 1, True]).get()
    # One audience per participant, whoever reads the same turns (issue 23, finding 5).
    assert result == {"dispatched": [["Cassia"], ["DM"], ["Thorin"]]}
    assert sent(callbacks) == [
        ("summarize_audience", (campaign.pk, ["Cassia"], 1, True)),
        ("summarize_audience", (campaign.pk, ["DM"], 1, True)),
        ("summarize_audience", (campaign.pk, ["Thorin"], 1, True)),
    ]
    # The per-audience tasks ran (eagerly here); a rerun adds nothing.
    keys = sorted(s.audience_key for s in Summary.objects.all())
    assert keys == ["|Cassia|", "|DM|", "|Thorin|"]
    again = tasks.summarize_audience.apply(args=[campaign.pk, ["Cassia"], 1, True]).get()
    assert again == {"created": []}


def test_the_checkpoint_task_claims_its_job_once(
    campaign, owner, django_capture_on_commit_callbacks
):
    make_turn(campaign, round=1, content="Rain.", hinge=True)
    with django_capture_on_commit_callbacks(execute=True):
        job = run_command(experiment=campaign, command="checkpoint", user=owner)
    assert Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED
    versions = list(Summary.objects.values_list("pk", flat=True))
    assert tasks.run_memory_job.apply(args=[str(job.pk)]).get() == Job.Status.SUCCEEDED
    assert list(Summary.objects.values_list("pk", flat=True)) == versions


def test_hydrate_task_reports_what_it_did(campaign):
    turn = make_turn(
        campaign,
        round=1,
        content="The KESTREL drops anchor by SaltMarch. SaltMarch cheers the KESTREL.",
    )
    report = tasks.hydrate_turn.apply(args=[turn.pk]).get()
    assert sorted(LoreEntry.objects.get(pk=pk).term for pk in report["created"]) == [
        "KESTREL",
        "SaltMarch",
    ]
    assert tasks.hydrate_turn.apply(args=[turn.pk]).get() == {
        "created": [],
        "updated": [],
        "invalidated": [],
    }
