"""Database constraints hold even when a writer bypasses the services."""

import pytest
from django.db import IntegrityError, transaction

from campaigns.models import Participant, Turn, WorldState
from tests.factories import make_turn

pytestmark = pytest.mark.django_db


def _raises_integrity(fn):
    with pytest.raises(IntegrityError), transaction.atomic():
        fn()


def test_a_role_is_unique_within_an_experiment(campaign):
    _raises_integrity(lambda: Participant.objects.create(experiment=campaign, role="Thorin"))


def test_the_same_role_may_exist_in_two_experiments(campaign, owner):
    from tests.factories import make_experiment

    other = make_experiment(owner=owner)
    assert other.participants.filter(role="Thorin").exists()


def test_seq_is_unique_within_an_experiment(campaign):
    turn = make_turn(campaign)
    _raises_integrity(
        lambda: Turn.objects.create(
            experiment=campaign, seq=turn.seq, round=1, speaker="DM", kind="narrative", content="x"
        )
    )


def test_turn_seq_increases_strictly(campaign):
    seqs = [make_turn(campaign, content=f"turn {i}").seq for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]


def test_round_cannot_be_negative_in_the_database(campaign):
    _raises_integrity(
        lambda: Turn.objects.create(
            experiment=campaign, seq=99, round=-1, speaker="DM", kind="narrative", content="x"
        )
    )


def test_turn_kind_is_checked_by_the_database(campaign):
    _raises_integrity(
        lambda: Turn.objects.create(
            experiment=campaign, seq=99, round=1, speaker="DM", kind="poem", content="x"
        )
    )


def test_participant_kind_is_checked_by_the_database(campaign):
    _raises_integrity(lambda: Participant.objects.create(experiment=campaign, role="X", kind="god"))


def test_an_experiment_has_exactly_one_world_state(campaign):
    assert WorldState.objects.filter(experiment=campaign).count() == 1
    _raises_integrity(lambda: WorldState.objects.create(experiment=campaign))


def test_token_count_is_computed_once_on_write(campaign):
    from context_engine import tokens

    turn = make_turn(campaign, content="The void-chisel bites into the seam <|endoftext|>.")
    assert turn.tokens == tokens.count(turn.content) > 0
    Turn.objects.filter(pk=turn.pk).update(content="changed without recount")
    turn.refresh_from_db()
    assert turn.tokens == tokens.count("The void-chisel bites into the seam <|endoftext|>.")


def test_an_experiment_has_at_most_one_active_round_job(campaign):
    from campaigns.models import Job

    Job.objects.create(experiment=campaign, kind="round", status="running")
    _raises_integrity(lambda: Job.objects.create(experiment=campaign, kind="round"))
    Job.objects.create(experiment=campaign, kind="checkpoint")  # other kinds are free
    Job.objects.filter(kind="round").update(status="succeeded")
    Job.objects.create(experiment=campaign, kind="round")  # finished rounds don't block
    assert Job.objects.filter(kind="round").count() == 2
