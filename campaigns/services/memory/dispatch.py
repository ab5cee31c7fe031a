"""Send memory tasks after the surrounding transaction commits, never inside it.

A task sent inside an open transaction can start before the rows it needs are visible
(or after they were rolled back); `transaction.on_commit` sends it once they exist.
Outside any transaction (a Celery task's own body) on_commit runs at once.

Follow-up work sent *from* a task goes to the queue that task came from, so a worker
pool dedicated to one queue keeps a campaign's whole memory pipeline to itself.
"""

from __future__ import annotations

from functools import partial

from celery import current_task
from django.db import transaction


def _current_queue() -> str | None:
    request = getattr(current_task, "request", None) if current_task else None
    if request is None or getattr(request, "is_eager", False):
        return None
    info = getattr(request, "delivery_info", None) or {}
    return info.get("routing_key") or None


def _send(task_name: str, args: tuple, kwargs: dict, queue: str | None) -> None:
    from campaigns import tasks  # tasks import the services: import lazily

    task = getattr(tasks, task_name)
    options = {"queue": queue} if queue else {}
    task.apply_async(args=args, kwargs=kwargs, **options)


def send_on_commit(task_name: str, *args, **kwargs) -> None:
    """Queue ``campaigns.tasks.<task_name>(*args, **kwargs)`` once the transaction commits."""
    transaction.on_commit(partial(_send, task_name, args, kwargs, _current_queue()))
