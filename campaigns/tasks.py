"""Celery tasks: take ids, re-fetch, return quietly if the row is gone, call a service.

All tasks here are idempotent (running one twice changes nothing more), so they are
acknowledged late and may be redelivered after a worker crash.
"""

from __future__ import annotations

from celery import shared_task

from campaigns.services import maintenance


@shared_task(acks_late=True, ignore_result=False)
def recount_turn_tokens(turn_id: int) -> int | None:
    """Recompute one turn's cached token count (after a tokenizer change, or an import)."""
    return maintenance.turn_recount_tokens(turn_id=turn_id)
