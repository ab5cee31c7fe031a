"""The end-to-end leak test: what actually goes over the wire to each model.

Random tables (Hypothesis): secret goals, private turns of every kind with random
audiences, then rounds played by agents on two real SDKs — the DM and Cassia on
google-genai, Thorin and Wren on openai — against stand-in servers that record every
request body. The agents answer with whispers, GM notes and monologues of their own.
Every text carries a unique marker; no request sent for an agent may contain a marker
of a text outside that agent's audience (the memory workers fold digests and lore in
between, so derived text is on the wire too). Agents may first send memory lookups (the
relay's tool: `/search`, `/timeline`, `/lore`), so the second request of such a step
carries retrieved snippets, which must obey the same rule.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from campaigns.models import RetrievalPin, Turn
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.memory import run_command
from campaigns.services.relay import round_start
from campaigns.services.turns import turn_create
from tests.factories import make_user
from tests.standins.server import Reply

pytestmark = pytest.mark.django_db

MODELS = {
    "DM": "gemini-dm",
    "Thorin": "openai:thorin",
    "Cassia": "gemini-cassia",
    "Wren": "openai:wren",
}
PLAYERS = ("Thorin", "Cassia", "Wren")
ROLES = ("DM", *PLAYERS)
MARKER = re.compile(r"zq\d{4}k")
_names = itertools.count()


def wire_role(record) -> str:
    """Which agent a recorded request was made for (each agent has its own model id)."""
    for role, model in MODELS.items():
        if record.model == model.removeprefix("openai:"):
            return role
    raise AssertionError(f"a request for an unknown model {record.model!r}")


seeded_turn = st.tuples(
    st.sampled_from(ROLES),
    st.sampled_from(["whisper", "gm_note", "monologue", "action", "intel"]),
    st.lists(st.sampled_from(ROLES), min_size=1, max_size=3, unique=True),
)
table = st.fixed_dictionaries(
    {
        "seeded": st.lists(seeded_turn, min_size=2, max_size=8),
        "whisper_to": st.lists(st.sampled_from(ROLES), min_size=6, max_size=6),
        "rounds": st.integers(1, 2),
        "checkpoint": st.booleans(),
        "existence": st.booleans(),
        # Per step (DM narrates, each player, DM answers): a memory lookup the agent sends
        # first (the relay's tool, issue 10), or None to answer at once.
        "lookups": st.lists(
            st.sampled_from([None, "/search quietly", "/timeline 0..3", "/lore ledger"]),
            min_size=5,
            max_size=5,
        ),
    }
)


class Markers:
    def __init__(self):
        self._count = itertools.count(1)

    def __call__(self) -> str:
        return f"zq{next(self._count):04d}k"


def seed(spec, owner, mark):
    experiment = experiment_create(
        name=f"Wire {next(_names)}",
        hook="The archive floods at the third bell.",
        config={
            "summarizer_model": "offline",
            "definer_model": "offline",
            "show_whisper_existence": spec["existence"],
        },
        owner=owner,
    )
    for order, role in enumerate(ROLES):
        participant_create(
            experiment=experiment,
            role=role,
            kind="dm" if role == "DM" else "player",
            model=MODELS[role],
            order=order,
            secret=f"{role} hides {mark()} in the ledger.",
        )
    for speaker, kind, audience in spec["seeded"]:
        visibility = sorted({speaker, *audience})
        if kind == "gm_note":
            speaker, visibility = "DM", ["DM"]
        elif kind == "monologue":
            visibility = [speaker]
        elif kind == "whisper" and len(visibility) < 2:
            visibility = sorted({speaker, "DM" if speaker != "DM" else "Wren"})
        turn_create(
            experiment=experiment,
            round=1,
            speaker=speaker,
            kind=kind,
            content=f"{speaker} says {mark()} quietly.",
            visibility=visibility,
        )
    return experiment


def script_round(spec, number, mark, gemini, openai) -> None:
    """Queue each agent's answer on its server, in the order the relay calls them."""
    to = spec["whisper_to"]
    dm = (
        f"PUBLIC: The water rises ({mark()}).\n"
        f"GM NOTE: The bell is cursed ({mark()}).\n"
        f"WHISPER to {to[0] if to[0] != 'DM' else 'Wren'}: Look under the stairs ({mark()})."
    )
    lookups = spec["lookups"]

    def first(step: int) -> list[Reply]:
        return [Reply(lookups[step])] if lookups[step] else []

    gemini.script([*first(0), Reply(dm)])
    for index, player in enumerate(PLAYERS):
        target = to[index + 1] if to[index + 1] != player else "DM"
        answer = (
            f"PUBLIC: {player} wades in ({mark()}).\n"
            f"WHISPER to {target}: I saw the key ({mark()}).\n"
            f"MONOLOGUE: I will keep the key ({mark()})."
        )
        server = gemini if MODELS[player].startswith("gemini-") else openai
        server.script([*first(index + 1), Reply(answer)])
    gemini.script([*first(4), Reply(f"WHISPER to {PLAYERS[number % 3]}: Not yet ({mark()}).")])


def audiences(experiment) -> dict[str, set[str]]:
    """Marker → roles that may read its text (turns as stored, secrets their owner's)."""
    readable: dict[str, set[str]] = {}
    for turn in Turn.objects.filter(experiment=experiment):
        roles = set(ROLES) if turn.visibility is None else set(turn.visibility)
        for marker in MARKER.findall(turn.content):
            readable[marker] = roles
    for participant in experiment.participants.all():
        for marker in MARKER.findall(participant.secret):
            readable[marker] = {participant.role}
    return readable


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(spec=table)
def test_no_request_to_a_model_carries_text_outside_its_agents_audience(
    spec, settings, gemini_standin, openai_standin, django_capture_on_commit_callbacks
):
    settings.GEMINI_API_KEY = "standin-key"
    settings.GEMINI_BASE_URL = gemini_standin.base_url
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 5
    gemini_standin.reset()
    openai_standin.reset()
    owner = make_user(f"owner{next(_names)}")
    mark = Markers()
    experiment = seed(spec, owner, mark)

    for number in range(2, 2 + spec["rounds"]):
        script_round(spec, number, mark, gemini_standin, openai_standin)
        with django_capture_on_commit_callbacks(execute=True):  # the round, then its memory
            job = round_start(experiment=experiment, user=owner)
        job.refresh_from_db()
        assert job.status == "succeeded", job.message
        if spec["checkpoint"]:
            with django_capture_on_commit_callbacks(execute=True):
                run_command(experiment=experiment, user=owner, command="checkpoint")

    readable = audiences(experiment)
    requests = [*gemini_standin.calls, *openai_standin.calls]
    # The rest are the window probes (model metadata): GETs that carry no text at all.
    probes = [*gemini_standin.requests, *openai_standin.requests]
    assert all(r.method == "GET" and not r.body for r in probes if r not in requests)
    looked_up = sum(1 for item in spec["lookups"] if item)
    assert len(requests) == spec["rounds"] * (len(PLAYERS) + 2 + looked_up)
    # Lookup lines ran as the agent's role (pins) and were never stored as turns.
    assert not Turn.objects.filter(experiment=experiment, content__contains="/search").exists()
    assert not Turn.objects.filter(experiment=experiment, content__contains="/timeline").exists()
    assert RetrievalPin.objects.filter(experiment=experiment).count() == (
        spec["rounds"] * looked_up
    )
    for record in requests:
        role = wire_role(record)
        body = record.body.decode("utf-8")
        leaked = {m for m in MARKER.findall(body) if role not in readable.get(m, set(ROLES))}
        assert not leaked, f"{role}'s request carried {sorted(leaked)}"
        # The wire is not empty of private text: each agent's own secret goal is sent.
        own = MARKER.findall(experiment.participants.get(role=role).secret)
        assert set(own) <= set(MARKER.findall(body))
