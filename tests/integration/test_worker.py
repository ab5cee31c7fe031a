"""A real worker consumes a task from real Redis and writes to the real PostgreSQL."""

import pytest

from campaigns.models import Turn
from campaigns.tasks import recount_turn_tokens
from context_engine import tokens
from tests.factories import make_turn
from tests.integration.worker import celery_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def test_a_worker_process_recounts_a_turn_in_postgres(real_services, campaign):
    turn = make_turn(campaign, content="The Hollow Bell rings twice over SaltMarch.")
    Turn.objects.filter(pk=turn.pk).update(tokens=0)
    with celery_worker(real_services) as queue:
        result = recount_turn_tokens.apply_async(args=[turn.pk], queue=queue)
        assert result.get(timeout=30) == tokens.count(turn.content)
        wait_for(lambda: Turn.objects.get(pk=turn.pk).tokens > 0)
        # Idempotent: running it again changes nothing more.
        assert recount_turn_tokens.apply_async(args=[turn.pk], queue=queue).get(timeout=30) == (
            tokens.count(turn.content)
        )
    assert Turn.objects.get(pk=turn.pk).tokens == tokens.count(turn.content)


def test_a_task_for_a_deleted_turn_returns_quietly(real_services, campaign):
    with celery_worker(real_services) as queue:
        assert recount_turn_tokens.apply_async(args=[987654], queue=queue).get(timeout=30) is None
