"""Mixed tables, at random (Hypothesis): any seats human (never all of them), each human
either posts (an action, a whisper or a monologue) or lets the timeout fire under either
policy, over one or two rounds. Every round ends; every step is stored exactly once and
every turn of the round belongs to exactly one step; and nothing the timeout path writes
for the DM (its notes) reaches a player's timeline or pack."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import RoundStep, Turn
from campaigns.reads.selectors import turns_visible_to, viewer_for_role
from campaigns.services.context import pack_for_role
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import human_timeout, human_turn_create, round_start
from context_engine.render import to_openai_messages
from tests.factories import make_experiment, make_user

pytestmark = pytest.mark.django_db

ROLES = ("DM", "Thorin", "Cassia")
PLAYERS = ("Thorin", "Cassia")
_names = itertools.count()

tables = st.fixed_dictionaries(
    {
        "humans": st.sets(st.sampled_from(ROLES), min_size=1, max_size=2),
        "policy": st.sampled_from(["skip", "narrate"]),
        # per human step, in order: None = the timeout fires; else what they post
        "moves": st.lists(
            st.sampled_from([None, "action", "whisper", "monologue"]), min_size=8, max_size=8
        ),
        "rounds": st.integers(1, 2),
    }
)


def human_post(experiment, owner, waiting, move, serial):
    role, step = waiting["role"], waiting["step"]
    text = f"{role} moves ({serial})."
    if role == "DM":
        kind, visibility = (
            ("whisper", ["DM", "Thorin"]) if step == "answer" else ("narrative", None)
        )
    else:
        kind = move
        visibility = {"action": None, "whisper": [role, "DM"], "monologue": [role]}[move]
    return human_turn_create(
        experiment=experiment,
        user=owner,
        speaker=role,
        kind=kind,
        content=text,
        visibility=visibility,
    )


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=tables)
def test_mixed_tables_store_every_step_once_and_timeout_notes_stay_with_the_dm(
    spec, django_capture_on_commit_callbacks
):
    owner = make_user(f"owner{next(_names)}")
    experiment = make_experiment(owner=owner, name=f"Table {next(_names)}")
    experiment.participants.update(model="offline")
    experiment.participants.filter(role__in=spec["humans"]).update(model="human")
    experiment_update(
        experiment=experiment,
        config={"human_timeout_s": 30, "human_timeout_policy": spec["policy"]},
    )
    moves = iter(spec["moves"] * 4)
    serial = itertools.count()

    for number in range(1, spec["rounds"] + 1):
        with django_capture_on_commit_callbacks(execute=True):
            job = round_start(experiment=experiment, user=owner)
        job.refresh_from_db()
        while job.status == "waiting":
            waiting = job.result["waiting"]
            move = next(moves)
            with django_capture_on_commit_callbacks(execute=True):
                if move is None:
                    later = timezone.now() + timedelta(seconds=31)
                    outcome = human_timeout(
                        job_id=job.pk,
                        round_=waiting["round"],
                        step=waiting["step"],
                        role=waiting["role"],
                        now=later,
                    )
                    assert outcome in ("skipped", "narrated")
                else:
                    human_post(experiment, owner, waiting, move, next(serial))
            job.refresh_from_db()
        assert job.status == "succeeded", job.message
        assert job.result["round"] == number

        rows = list(RoundStep.objects.filter(experiment=experiment, round=number))
        keys = Counter((r.step, r.speaker) for r in rows)
        assert set(keys.values()) == {1}
        assert {key for key in keys if key[0] != "answer"} == {
            ("narrate", "DM"),
            ("act", "Thorin"),
            ("act", "Cassia"),
        }
        claimed = Counter(pk for r in rows for pk in r.turns)
        in_round = set(
            Turn.objects.filter(experiment=experiment, round=number).values_list("pk", flat=True)
        )
        assert set(claimed.values()) <= {1} and set(claimed) == in_round

    notes = Turn.objects.filter(experiment=experiment, kind="system")
    assert all(note.visibility == ["DM"] for note in notes)
    for player in PLAYERS:
        viewer = viewer_for_role(experiment=experiment, role=player)
        assert not turns_visible_to(experiment=experiment, viewer=viewer).filter(kind="system")
        pack = pack_for_role(experiment=experiment, role=player, input_text="What now?")
        sent = "\n".join(m["content"] for m in to_openai_messages(pack))
        assert "did not act within" not in sent
