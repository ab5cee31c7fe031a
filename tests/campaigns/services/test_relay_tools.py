"""The relay's memory tool (issue 10, ask 6): an agent sends `/search`, `/lore` or
`/timeline` lines, the relay runs them as that agent's role, rebuilds its pack with the
pinned snippets and asks once more. Through the real SDKs against the stand-in servers,
and offline (deterministic)."""

from __future__ import annotations

import pytest

from campaigns import demo
from campaigns.models import RetrievalPin, Turn
from campaigns.services import transcripts
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.relay import round_start
from campaigns.services.turns import turn_create
from tests.standins.server import Reply

pytestmark = pytest.mark.django_db

SECRET = "zq7001k"  # in Cassia's whisper to the DM only
PUBLIC = "zq7002k"  # in an old public turn


@pytest.fixture
def wired(settings, owner, gemini_standin, openai_standin):
    """DM and Cassia on google-genai, Thorin on openai; an old whisper and an old fact."""
    settings.GEMINI_API_KEY = "standin-key"
    settings.GEMINI_BASE_URL = gemini_standin.base_url
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.LLM_TIMEOUT_SECONDS = 5
    experiment = experiment_create(
        name="Tools",
        hook="The archive floods at the third bell.",
        config={"summarizer_model": "offline", "definer_model": "offline"},
        owner=owner,
    )
    for order, (role, model) in enumerate(
        (("DM", "gemini-dm"), ("Thorin", "openai:thorin"), ("Cassia", "gemini-cassia"))
    ):
        participant_create(
            experiment=experiment,
            role=role,
            kind="dm" if role == "DM" else "player",
            model=model,
            order=order,
        )
    turn_create(
        experiment=experiment,
        round=1,
        speaker="DM",
        kind="narrative",
        content=f"The Quillstone was last seen in the bell tower ({PUBLIC}).",
    )
    turn_create(
        experiment=experiment,
        round=1,
        speaker="Cassia",
        kind="whisper",
        content=f"Cassia, to the DM: I took the Quillstone from the tower ({SECRET}).",
        visibility=["Cassia", "DM"],
    )
    return experiment


def play(experiment, owner, capture):
    with capture(execute=True):
        job = round_start(experiment=experiment, user=owner)
    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    return job


def bodies(server, model):
    return [r.body.decode("utf-8") for r in server.calls if r.model == model]


def script(gemini, openai, *, dm_first=(), thorin_first=(), cassia_first=()):
    gemini.script([*map(Reply, dm_first), Reply("PUBLIC: The bell tolls.\nCHOICE: go or stay?")])
    openai.script(
        [*map(Reply, thorin_first), Reply("PUBLIC: Thorin climbs.\nWHISPER to DM: where is it?")]
    )
    gemini.script([*map(Reply, cassia_first), Reply("PUBLIC: Cassia waits.")])
    gemini.script([Reply("WHISPER to Thorin: Not yet.")])


def test_the_second_request_carries_the_snippets_the_agent_asked_for(
    wired, owner, gemini_standin, openai_standin, django_capture_on_commit_callbacks
):
    script(gemini_standin, openai_standin, thorin_first=["/search Quillstone tower"])
    play(wired, owner, django_capture_on_commit_callbacks)
    first, second = bodies(openai_standin, "thorin")
    assert "Memory lookup (optional" in first  # the tool is offered
    assert "Your lookups ran: /search Quillstone tower" in second
    tail = second.split("## Retrieved memories", 1)[1]
    assert PUBLIC in tail  # the pinned snippet leads the retrieval section
    # Neither request carries the whisper Thorin may not read, nor a hint of it.
    assert SECRET not in first and SECRET not in second
    pin = RetrievalPin.objects.get(experiment=wired)
    assert (pin.role, pin.command, pin.query) == ("Thorin", "search", "Quillstone tower")
    assert all(Turn.objects.get(pk=pk).content.find(SECRET) < 0 for pk in pin.turn_ids)


def test_the_dm_looks_up_what_it_may_read(
    wired, owner, gemini_standin, openai_standin, django_capture_on_commit_callbacks
):
    script(gemini_standin, openai_standin, dm_first=["/search Quillstone"])
    play(wired, owner, django_capture_on_commit_callbacks)
    dm = bodies(gemini_standin, "gemini-dm")
    assert len(dm) == 3  # narrate twice (the lookup, then the answer), then answer whispers
    assert dm[1].split("## Retrieved memories", 1)[1].count(SECRET) >= 1
    assert RetrievalPin.objects.get().role == "DM"


def test_lookup_lines_are_never_stored_and_a_second_lookup_is_not_run(
    wired, owner, gemini_standin, openai_standin, django_capture_on_commit_callbacks
):
    openai_standin.script(
        [
            Reply("/lore Quillstone\nPUBLIC: this block is discarded"),
            Reply("/timeline 0..1\nPUBLIC: Thorin climbs the tower."),
        ]
    )
    gemini_standin.script([Reply("PUBLIC: The bell tolls.")])
    # (the DM narrates first: script it ahead of Thorin's queue on the other server)
    gemini_standin.script([Reply("PUBLIC: Cassia waits."), Reply("WHISPER to Thorin: Not yet.")])
    play(wired, owner, django_capture_on_commit_callbacks)
    assert len(bodies(openai_standin, "thorin")) == 2  # one tool round per step, at most
    assert list(RetrievalPin.objects.values_list("command", flat=True)) == ["lore"]
    contents = list(Turn.objects.filter(speaker="Thorin").values_list("content", flat=True))
    assert contents == ["Thorin climbs the tower."]
    assert not Turn.objects.filter(content__contains="/timeline").exists()
    assert not Turn.objects.filter(content__contains="discarded").exists()


def test_a_bad_lookup_is_refused_in_the_note_and_pins_nothing(
    wired, owner, gemini_standin, openai_standin, django_capture_on_commit_callbacks
):
    script(gemini_standin, openai_standin, thorin_first=["/timeline 9..2"])
    play(wired, owner, django_capture_on_commit_callbacks)
    second = bodies(openai_standin, "thorin")[1]
    assert "/timeline 9..2 (refused: query: The range ends (2) before it starts (9).)" in second
    assert not RetrievalPin.objects.exists()


# -- offline: the deterministic agent exercises the tool ------------------------------


def offline_round(owner, capture):
    data = demo.transcript()
    data["experiment"]["config"] = {
        **data["experiment"].get("config", {}),
        "offline_agent_tools": True,
    }
    experiment = transcripts.import_transcript(data=data, owner=owner)
    job = play(experiment, owner, capture)
    return experiment, job


def test_the_offline_dm_asks_for_this_rounds_timeline_before_answering_whispers(
    owner, django_capture_on_commit_callbacks
):
    experiment, job = offline_round(owner, django_capture_on_commit_callbacks)
    number = job.result["round"]
    pin = RetrievalPin.objects.get(experiment=experiment)
    assert (pin.role, pin.command, pin.query) == ("DM", "timeline", f"{number}..{number}")
    assert pin.turn_ids  # this round's turns the DM reads
    answered = Turn.objects.filter(experiment=experiment, round=number, speaker="DM")
    assert answered.filter(kind="whisper").exists()  # its real answer was stored
    assert not Turn.objects.filter(experiment=experiment, content__startswith="/").exists()
    assert not Turn.objects.filter(experiment=experiment, needs_review=True, round=number).exists()


def test_offline_rounds_with_the_tool_are_deterministic(owner, django_capture_on_commit_callbacks):
    runs = []
    for _ in range(2):
        experiment, job = offline_round(owner, django_capture_on_commit_callbacks)
        runs.append(
            list(
                Turn.objects.filter(experiment=experiment, round=job.result["round"])
                .order_by("seq")
                .values_list("speaker", "kind", "content")
            )
        )
    assert runs[0] == runs[1]
