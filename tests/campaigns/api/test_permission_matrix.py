"""The whole permission matrix: persona × endpoint → status, and writes only when allowed.

owner and staff do everything; the user linked to Thorin reads Thorin's view and may post
only as Thorin; a stranger gets 404 for the experiment and everything under it; anonymous
requests get 401. A refused write leaves the database exactly as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from campaigns import demo
from campaigns.models import (
    ContextEvent,
    Experiment,
    Job,
    LoreEntry,
    LoreRevision,
    Participant,
    Turn,
)
from tests.campaigns.api.conftest import Secrets

pytestmark = pytest.mark.django_db

PERSONAS = ("owner", "staff", "player", "stranger", "anonymous")


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str  # formatted with e (experiment id), lid (public lore), hidden (DM lore), job
    expected: dict[str, int]
    body: Any = None
    writes: bool = False


def _row(owner, player, stranger, *, staff=None, anonymous=401):
    return {
        "owner": owner,
        "staff": owner if staff is None else staff,
        "player": player,
        "stranger": stranger,
        "anonymous": anonymous,
    }


THORIN_ACTION = {"round": 1, "speaker": "Thorin", "kind": "action", "content": "I dive."}
CASSIA_ACTION = {**THORIN_ACTION, "speaker": "Cassia"}
GM_NOTE = {"round": 1, "speaker": "DM", "kind": "gm_note", "content": "Note.", "visibility": ["DM"]}
E = "/api/experiments/{e}"

CASES = [
    Case("list experiments", "get", "/api/experiments/", _row(200, 200, 200)),
    Case(
        "create experiment", "post", "/api/experiments/", _row(201, 201, 201), {"name": "N"}, True
    ),
    Case("read experiment", "get", E + "/", _row(200, 200, 404)),
    Case("edit experiment", "patch", E + "/", _row(200, 403, 404), {"name": "Renamed"}, True),
    Case("delete experiment", "delete", E + "/", _row(204, 403, 404), None, True),
    Case("list participants", "get", E + "/participants/", _row(200, 200, 404)),
    Case(
        "add participant",
        "post",
        E + "/participants/",
        _row(201, 403, 404),
        {"role": "Brannoc"},
        True,
    ),
    Case("list turns", "get", E + "/turns/", _row(200, 200, 404)),
    Case("list turns as DM", "get", E + "/turns/?as=DM", _row(200, 200, 404)),
    Case("post own turn", "post", E + "/turns/", _row(201, 201, 404), THORIN_ACTION, True),
    Case("post as another", "post", E + "/turns/", _row(201, 403, 404), CASSIA_ACTION, True),
    Case("post GM note", "post", E + "/turns/", _row(201, 403, 404), GM_NOTE, True),
    Case("list lore", "get", E + "/lore/", _row(200, 200, 404)),
    Case("add lore", "post", E + "/lore/", _row(201, 403, 404), {"term": "Brinewick"}, True),
    Case("read public lore", "get", E + "/lore/{lid}/", _row(200, 200, 404)),
    Case("read DM-only lore", "get", E + "/lore/{hidden}/", _row(200, 404, 404)),
    Case("edit lore", "patch", E + "/lore/{lid}/", _row(200, 403, 404), {"locked": True}, True),
    Case("list summaries", "get", E + "/summaries/", _row(200, 200, 404)),
    Case("own context", "get", E + "/context/Thorin/", _row(200, 200, 404)),
    Case("DM context", "get", E + "/context/DM/", _row(200, 403, 404)),
    Case("other player's context", "get", E + "/context/Cassia/", _row(200, 403, 404)),
    Case("command", "post", E + "/commands/", _row(202, 403, 404), {"command": "clear"}, True),
    Case("round", "post", E + "/rounds/", _row(202, 403, 404), {}, True),
    Case("task", "get", "/api/tasks/{job}/", _row(200, 200, 404)),
    Case("export", "get", E + "/export/", _row(200, 403, 404)),
    Case("own session log", "get", E + "/log/", _row(200, 200, 404)),
    Case("session log as Thorin", "get", E + "/log/?as=Thorin&format=html", _row(200, 200, 404)),
    Case("session log as Cassia", "get", E + "/log/?as=Cassia", _row(200, 403, 404)),
    Case("list facts", "get", E + "/facts/", _row(200, 200, 404)),
    Case("arena reports", "get", E + "/arena/", _row(200, 403, 404)),
    Case(
        "start arena",
        "post",
        E + "/arena/",
        _row(202, 403, 404),
        {"strategies": ["sliding_window"], "budgets": [4000]},
        True,
    ),
    Case("import", "post", "/api/import/", _row(201, 201, 201), demo.transcript(), True),
]


def _fingerprint(experiment_id: int) -> tuple:
    experiment = Experiment.objects.filter(pk=experiment_id).values("name", "status").first()
    return (
        experiment,
        Experiment.objects.count(),
        Participant.objects.count(),
        Turn.objects.count(),
        LoreEntry.objects.count(),
        tuple(LoreEntry.objects.order_by("pk").values_list("locked", flat=True)),
        LoreRevision.objects.count(),
        ContextEvent.objects.count(),
        Job.objects.count(),
    )


@pytest.fixture
def users(secrets_campaign: Secrets, owner, staff_user, player, stranger) -> dict:
    # Model-played agents, so that a round may start (an all-human cast cannot).
    secrets_campaign.experiment.participants.update(model="offline")
    return {
        "owner": owner,
        "staff": staff_user,
        "player": player,
        "stranger": stranger,
        "anonymous": None,
    }


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_permission_matrix(api, secrets_campaign, users, case, persona):
    experiment = secrets_campaign.experiment
    lid, hidden = secrets_campaign.lore["public_lore"].pk, secrets_campaign.lore["dm_lore"].pk
    if persona == "player":
        # A player knows entries by position among those they read (one: the public one);
        # the DM-only entry has no number of theirs, so they ask for the next one.
        lid, hidden = 1, 2
    path = case.path.format(e=experiment.pk, lid=lid, hidden=hidden, job=secrets_campaign.job.pk)
    before = _fingerprint(experiment.pk)
    client = api(users[persona])
    kwargs = {} if case.body is None else {"data": case.body, "format": "json"}
    response = getattr(client, case.method)(path, **kwargs)
    expected = case.expected[persona]
    assert response.status_code == expected, getattr(response, "data", response.content)
    after = _fingerprint(experiment.pk)
    if case.writes and 200 <= expected < 300:
        assert after != before, "an allowed write changed nothing"
    else:
        assert after == before, "a read or refused write changed the database"


def test_anonymous_requests_are_asked_to_authenticate(api, campaign):
    response = api(None).get(f"/api/experiments/{campaign.pk}/turns/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")
