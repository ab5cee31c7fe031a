"""Services send tasks by name through `campaigns.services.dispatch`, never importing
`campaigns.tasks`: the name must find the very task the worker runs, after commit."""

from __future__ import annotations

import pytest
from celery import Task

from campaigns import tasks
from campaigns.services import dispatch
from tests.factories import make_experiment, make_turn

TASK_NAMES = sorted(
    name
    for name, value in vars(tasks).items()
    if isinstance(value, Task) and not name.startswith("_")
)


def test_every_task_in_the_tasks_module_is_found_by_its_short_name():
    assert TASK_NAMES, "campaigns.tasks defines no tasks"
    for name in TASK_NAMES:
        assert dispatch.task(name).name == getattr(tasks, name).name == f"campaigns.tasks.{name}"


def test_an_unknown_task_name_fails_loudly_instead_of_sending_nowhere():
    with pytest.raises(KeyError, match=r"campaigns\.tasks\.no_such_task"):
        dispatch.task("no_such_task")


@pytest.mark.django_db
def test_a_task_sent_by_name_runs_only_once_the_transaction_commits(
    django_capture_on_commit_callbacks,
):
    turn = make_turn(make_experiment(), content="The ferry leaves at dawn.")
    type(turn).objects.filter(pk=turn.pk).update(tokens=0)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        dispatch.send_on_commit("recount_turn_tokens", turn.pk)
    turn.refresh_from_db()
    assert turn.tokens == 0 and len(callbacks) == 1
    callbacks[0]()
    turn.refresh_from_db()
    assert turn.tokens > 0
