"""Send Celery tasks by name, after the surrounding transaction commits, never inside it.

Services send tasks through here and never import `campaigns.tasks`, which imports the
services: a task is looked up in Celery's registry by name, so imports point one way.
`CampaignsConfig.ready()` imports `campaigns.tasks`, so every process (web, worker, the
eager mode without a broker) has them registered; an unknown name raises KeyError.

A task sent inside an open transaction can start before the rows it needs are visible
(or after they were rolled back); `transaction.on_commit` sends it once they exist.
Outside any transaction (a Celery task's own body) on_commit runs at once.

Follow-up work sent *from* a task goes to the queue that task came from, so a worker
pool dedicated to one queue keeps a campaign's whole memory pipeline to itself.
"""

from __future__ import annotations

from functools import partial

from celery import Task, current_app, current_task
from django.db import transaction


def task(task_name: str) -> Task:
    """The registered task ``campaigns.tasks.<task_name>`` (KeyError for an unknown name)."""
    return current_app.tasks[f"campaigns.tasks.{task_name}"]


def _current_queue() -> str | None:
    request = getattr(current_task, "request", None) if current_task else None
    if request is None or getattr(request, "is_eager", False):
        return None
    info = getattr(request, "delivery_info", None) or {}
    return info.get("routing_key") or None


def _send(task_name: str, args: tuple, kwargs: dict, queue: str | None) -> None:
    options = {"queue": queue} if queue else {}
    task(task_name).apply_async(args=args, kwargs=kwargs, **options)


def send_on_commit(task_name: str, *args, **kwargs) -> None:
    """Queue ``campaigns.tasks.<task_name>(*args, **kwargs)`` once the transaction commits."""
    transaction.on_commit(partial(_send, task_name, args, kwargs, _current_queue()))
