"""Noninterference (issue 23, ask 5): what a player reads is the same, byte for byte, for
two campaigns that differ only in what that player cannot read.

One script of things Thorin reads (public turns, his own whisper to the DM, public lore)
is played twice: once as it is, once with random hidden additions between its steps —
GM notes, whispers between others, others' monologues, a secret goal not yet due,
DM-only lore — and both end with a /checkpoint (digests for every audience). Between the
two runs the database is rolled back and its id sequences reset, so both campaigns get the
same ids: any number Thorin is shown that counts hidden rows shows as a difference.

Thorin's view: the API (experiment, participants, turns, lore list and entry, summaries,
his pack with ``debug``, the checkpoint job's status, ``/search``) and the console (the
campaign page and its round-status and earlier-turns partials, whispers, GM notes, the
World Bible and an entry's history, memory, his context inspector, the dashboard, the job
partial). Only what legitimately differs per request is normalised: CSRF tokens,
timestamps, and job UUIDs (random, not counters).
"""

from __future__ import annotations

import itertools
import re

import pytest
from django.db import connection, transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import Job, Participant
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.lore import lore_create
from campaigns.services.memory import run_command
from campaigns.services.turns import turn_create
from tests.campaigns.api.conftest import client_for
from tests.factories import make_user

pytestmark = pytest.mark.django_db(transaction=False)

ROLES = ("DM", "Thorin", "Cassia", "Wren")
VISIBLE_STEPS = 6  # hidden additions go before any of these steps, or after the last
_names = itertools.count()


def _visible_step(experiment, owner, index: int) -> None:
    """The script Thorin reads: step ``index`` (0..VISIBLE_STEPS-1)."""
    round_ = 1 + index // 3
    if index == 0:
        lore_create(
            experiment=experiment,
            user=owner,
            term="Sunken Archive",
            category="location",
            definition="A flooded library under Lowmere.",
            audience=None,
        )
    speaker, kind, content, visibility = [
        ("DM", "narrative", "The tide drops; the Sunken Archive lies open.", None),
        ("Thorin", "action", "I wade to the lantern shelf.", None),
        ("Thorin", "whisper", "Is the shelf trapped?", ["Thorin", "DM"]),
        ("DM", "narrative", "Brass gears turn under the water.", None),
        ("Cassia", "action", "I follow Thorin with the lantern.", None),
        ("Thorin", "action", "I pry the brass gear loose.", None),
    ][index]
    turn_create(
        experiment=experiment,
        round=round_,
        speaker=speaker,
        kind=kind,
        content=content,
        visibility=visibility,
    )


HIDDEN_KINDS = ("gm_note", "whisper_others", "whisper_dm", "monologue", "secret", "dm_lore")


def _hidden_step(experiment, owner, kind: str, serial: int, round_: int) -> None:
    """One addition Thorin cannot read. Its words also name the public lore's term and
    words of Thorin's own turns, so a leak through search or mentions would show."""
    text = f"Hidden {serial}: the lantern shelf in the Sunken Archive hides a brass gear."
    if kind == "secret":
        Participant.objects.filter(experiment=experiment, role="Cassia").update(
            secret=f"Cassia means to drown the Archive ({serial}).", reveal_round=90 + serial
        )
        return
    if kind == "dm_lore":
        lore_create(
            experiment=experiment,
            user=owner,
            term=f"Drowned Gear {serial}",
            category="artifact",
            definition=text,
            audience=["DM"],
        )
        return
    speaker, turn_kind, visibility = {
        "gm_note": ("DM", "gm_note", ["DM"]),
        "whisper_others": ("Cassia", "whisper", ["Cassia", "Wren"]),
        "whisper_dm": ("Wren", "whisper", ["Wren", "DM"]),
        "monologue": ("Cassia", "monologue", ["Cassia"]),
    }[kind]
    turn_create(
        experiment=experiment,
        round=round_,
        speaker=speaker,
        kind=turn_kind,
        content=text,
        visibility=visibility,
    )


def _build(owner, player, hidden: dict[int, list[str]], capture_callbacks):
    experiment = experiment_create(name="Lowmere", hook="A flooded archive.", owner=owner)
    for order, role in enumerate(ROLES):
        participant_create(
            experiment=experiment,
            role=role,
            kind="dm" if role == "DM" else "player",
            order=order,
            model="offline",
        )
    experiment.participants.filter(role="Thorin").update(user=player)
    experiment.current_round = 1  # the DM opened round 1 before anything happened
    experiment.save(update_fields=["current_round"])
    serial = itertools.count()
    with capture_callbacks(execute=True):
        for index in range(VISIBLE_STEPS + 1):
            for kind in hidden.get(index, ()):
                # Into the open round: posting into a later one would open it, and the
                # clock is public (who may move it is issue 23's ask 2).
                experiment.refresh_from_db(fields=["current_round"])
                _hidden_step(experiment, owner, kind, next(serial), experiment.current_round)
            if index < VISIBLE_STEPS:
                _visible_step(experiment, owner, index)
        job = run_command(experiment=experiment, command="checkpoint", user=owner)
    return experiment, job


_NORMALISE = [
    (re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]+'), r"\1CSRF"),
    (re.compile(r'("X-CSRFToken": ")[^"]+'), r"\1CSRF"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?"), "TIME"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "UUID"),
]


def _normalised(text: str) -> str:
    for pattern, replacement in _NORMALISE:
        text = pattern.sub(replacement, text)
    return text


def _thorins_view(experiment, job, player) -> dict[str, str]:
    """Everything Thorin's user reads, as text."""
    api = client_for(player)
    web = Client()
    web.force_login(player)
    e = f"/api/experiments/{experiment.pk}"
    c = f"/campaigns/{experiment.pk}"
    hx = {"HTTP_HX_REQUEST": "true"}
    reads = {
        "experiment": api.get(f"{e}/"),
        "participants": api.get(f"{e}/participants/"),
        "turns": api.get(f"{e}/turns/", {"page_size": 500}),
        "turns round 2": api.get(f"{e}/turns/", {"round": 2}),
        "lore": api.get(f"{e}/lore/"),
        "lore 1": api.get(f"{e}/lore/1/"),
        "lore 2": api.get(f"{e}/lore/2/"),
        "summaries": api.get(f"{e}/summaries/"),
        "pack": api.get(
            f"{e}/context/Thorin/", {"debug": "true", "input": "Did Cassia see the brass gear?"}
        ),
        "job": api.get(f"/api/tasks/{job.pk}/"),
        "page": web.get(f"{c}/"),
        "round status": web.get(f"{c}/", {"part": "round_status"}, **hx),
        "earlier": web.get(f"{c}/", {"before": 3}, **hx),
        "whispers": web.get(f"{c}/whispers/"),
        "notes": web.get(f"{c}/notes/"),
        "world bible": web.get(f"{c}/lore/", {"tab": "confirmed"}),
        "lore history": web.get(f"{c}/lore/1/history/"),
        "memory": web.get(f"{c}/memory/"),
        "inspector": web.get(f"{c}/context/Thorin/", {"input": "Did Cassia see the brass gear?"}),
        "dashboard": web.get("/"),
        "job partial": web.get(f"{c}/jobs/{job.pk}/", **hx),
        # Last: a search pins its results into Thorin's next pack (a write of his own).
        "search": api.post(
            f"{e}/commands/", {"command": "search", "query": "brass gear lantern"}, format="json"
        ),
    }
    return {
        name: f"{response.status_code}\n{_normalised(response.content.decode())}"
        for name, response in reads.items()
    }


def _sequences() -> list[tuple[str, int, bool]]:
    """PostgreSQL's id sequences (not rolled back with a transaction), to reset them."""
    if connection.vendor != "postgresql":
        return []  # SQLite's AUTOINCREMENT counters live in a table: rolled back
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = 'public'"
        )
        found = cursor.fetchall()
    states = []
    with connection.cursor() as cursor:
        for name, _ in found:
            cursor.execute(f'SELECT last_value, is_called FROM "{name}"')
            value, called = cursor.fetchone()
            states.append((name, value, called))
    return states


def _reset(states) -> None:
    with connection.cursor() as cursor:
        for name, value, called in states:
            cursor.execute("SELECT setval(%s, %s, %s)", [name, value, called])


class _Rollback(Exception):
    pass


def _view_of(owner, player, hidden, capture_callbacks) -> dict[str, str]:
    """Thorin's view of one run, then everything the run wrote is undone."""
    states = _sequences()
    view = {}
    try:
        with transaction.atomic():
            experiment, job = _build(owner, player, hidden, capture_callbacks)
            assert Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED
            view = _thorins_view(experiment, job, player)
            raise _Rollback
    except _Rollback:
        pass
    _reset(states)
    return view


hidden_additions = st.dictionaries(
    st.integers(0, VISIBLE_STEPS),
    st.lists(st.sampled_from(HIDDEN_KINDS), min_size=1, max_size=3),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(hidden=hidden_additions)
def test_a_players_view_does_not_depend_on_what_is_hidden_from_them(
    hidden, django_capture_on_commit_callbacks
):
    owner = make_user(f"owner{next(_names)}")
    player = make_user(f"thorin{next(_names)}")
    plain = _view_of(owner, player, {}, django_capture_on_commit_callbacks)
    with_hidden = _view_of(owner, player, hidden, django_capture_on_commit_callbacks)
    assert plain["turns"].startswith("200") and "brass gear" in plain["search"]
    for name in plain:
        assert with_hidden[name] == plain[name], f"{name} differs with {hidden}"
    assert "Hidden" not in "".join(with_hidden.values())
