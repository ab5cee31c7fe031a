"""Watching a round live (issue 25): each page's stream carries the drafts of the answers
it may read as the models write them — whispers only to their audience, monologues only
to their speaker, GM notes only to the DM side, public text only once the output guard
has passed it — and a reconnect resumes without loss or duplicates."""

from __future__ import annotations

import time

import pytest

from campaigns.models import Turn
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import round_start, steps
from tests.campaigns.services.memory_support import use_gemini
from tests.factories import make_turn
from tests.live_support import drafts_by_id, open_live, parse_frames, read_live
from tests.standins.server import Reply

pytestmark = pytest.mark.django_db

MODEL = "gemini-2.5-flash"
DM_NARRATION = (
    "PUBLIC: The tide drops and the door groans.\n"
    "GM NOTE: The door is a mimic; it wakes at the third bell."
)
THORIN_ACTS = (
    "PUBLIC: Thorin dives for the door.\n"
    "WHISPER to DM: Can I feel a draught under the door?\n"
    "MONOLOGUE: I hate the water."
)
CASSIA_ACTS = "PUBLIC: Cassia waits on the pier.\nMONOLOGUE: Let him go first."
DM_ANSWERS = "WHISPER to Thorin: Yes, a cold draught from below."


@pytest.fixture
def table(campaign, settings, gemini_standin, monkeypatch):
    use_gemini(settings, gemini_standin)
    settings.BABEL_LIVE_MAX_SECONDS = 0.5  # a connection ends soon after the round
    campaign.participants.update(model=MODEL)
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    monkeypatch.setattr(steps, "_sleep", lambda _s: None)
    return campaign


def play(experiment, user, capture):
    with capture(execute=True):
        round_start(experiment=experiment, user=user)


def watch(client, user, experiment, **kwargs):
    client.force_login(user)
    return open_live(client, experiment, **kwargs)


def texts(frames, **match):
    return sorted(
        d["text"]
        for d in drafts_by_id(frames).values()
        if all(d.get(k) == v for k, v in match.items())
    )


def test_each_page_gets_the_drafts_of_what_it_may_read(
    table, owner, player, client, gemini_standin, django_capture_on_commit_callbacks
):
    from django.test import Client

    gemini_standin.chunk_words = 2
    gemini_standin.script([Reply(DM_NARRATION), Reply(THORIN_ACTS), Reply(CASSIA_ACTS)])
    gemini_standin.script([Reply(DM_ANSWERS)])
    thorin_page = watch(client, player, table)
    dm_page = watch(Client(), owner, table, as_role="DM")
    owner_page = watch(Client(), owner, table)
    play(table, owner, django_capture_on_commit_callbacks)

    thorin = parse_frames(read_live(thorin_page))
    assert texts(thorin) == sorted(
        [
            "The tide drops and the door groans.",
            "Thorin dives for the door.",
            "Can I feel a draught under the door?",
            "I hate the water.",
            "Cassia waits on the pier.",
            "Yes, a cold draught from below.",
        ]
    )
    dm = parse_frames(read_live(dm_page))
    assert "The door is a mimic; it wakes at the third bell." in texts(dm, kind="gm_note")
    assert "Let him go first." not in texts(dm) and "I hate the water." not in texts(dm)
    everything = parse_frames(read_live(owner_page))
    assert len(drafts_by_id(everything)) == 2 + 3 + 2 + 1  # every part of every answer
    # each draft grew in order, piece by piece, and was replaced by the stored step
    for frames in (thorin, dm, everything):
        for draft_id, draft in drafts_by_id(frames).items():
            assert draft["seqs"] == list(range(1, len(draft["seqs"]) + 1))
            assert any(f.event == "stored" and f.data["draft_id"] == draft_id for f in frames)
    stored_turns = set(Turn.objects.filter(experiment=table, round=1).values_list("pk", flat=True))
    owner_stored = [f for f in everything if f.event == "stored"]
    assert {t for f in owner_stored for t in f.data["turns"]} == stored_turns
    # a player's stream names no turn id (a global counter) and no one else's monologue
    assert all("turns" not in f.data for f in thorin)
    assert b"Let him go first" not in read_live(watch(client, player, table))


def test_the_progress_bar_says_who_is_acting_only_to_the_owner(
    table, owner, player, client, gemini_standin, django_capture_on_commit_callbacks
):
    from django.test import Client

    gemini_standin.script([Reply(DM_NARRATION), Reply(THORIN_ACTS), Reply(CASSIA_ACTS)])
    gemini_standin.script([Reply(DM_ANSWERS)])
    thorin_page = watch(client, player, table)
    owner_page = watch(Client(), owner, table)
    play(table, owner, django_capture_on_commit_callbacks)
    thorin = [f.data for f in parse_frames(read_live(thorin_page)) if f.event == "progress"]
    owner_view = [f.data for f in parse_frames(read_live(owner_page)) if f.event == "progress"]
    assert "Round 1: Cassia acting…" in [p.get("message") for p in owner_view]
    assert thorin and all(set(p) == {"round", "percent"} for p in thorin)


def test_a_public_answer_quoting_a_gm_note_never_reaches_a_player_page(
    table, owner, player, client, gemini_standin, django_capture_on_commit_callbacks
):
    from django.test import Client

    secret = "the mayor keeps the drowned ledger beneath the chapel floor stones"
    make_turn(table, round=0, speaker="DM", kind="gm_note", content=secret, visibility=["DM"])
    leak = f"PUBLIC: Thorin shouts that {secret} tonight."
    gemini_standin.script([Reply("PUBLIC: Night falls."), Reply(leak), Reply(CASSIA_ACTS)])
    thorin_page = watch(client, player, table)
    owner_page = watch(Client(), owner, table)
    play(table, owner, django_capture_on_commit_callbacks)

    raw = read_live(thorin_page)
    frames = parse_frames(raw)
    assert b"drowned ledger" not in raw and b"chapel floor" not in raw
    withdrawn = {f.data["draft_id"] for f in frames if f.event == "withdrawn"}
    [held_draft] = [d for d in drafts_by_id(frames).values() if d["speaker"] == "Thorin"]
    assert held_draft["draft_id"] in withdrawn
    assert Turn.objects.filter(experiment=table, round=1, speaker="Thorin").get().held_at
    owner_drafts = drafts_by_id(parse_frames(read_live(owner_page)))
    held = [d for d in owner_drafts.values() if d.get("held")]
    assert [d["text"] for d in held] == [leak.removeprefix("PUBLIC: ")]


def test_a_reconnect_resumes_after_the_last_event_it_saw(
    table, owner, client, gemini_standin, django_capture_on_commit_callbacks
):
    gemini_standin.script([Reply(DM_NARRATION), Reply(THORIN_ACTS), Reply(CASSIA_ACTS)])
    gemini_standin.script([Reply(DM_ANSWERS)])
    first = watch(client, owner, table, as_role="Thorin")
    play(table, owner, django_capture_on_commit_callbacks)
    whole = parse_frames(read_live(first))
    cut = len(whole) // 2
    again = parse_frames(
        read_live(open_live(client, table, as_role="Thorin", last_event_id=whole[cut].id))
    )
    assert again[0].event == "hello"
    assert [(f.event, f.data) for f in whole[cut + 1 :]] == [(f.event, f.data) for f in again[1:]]


def test_a_connection_sends_what_waits_for_it_however_late_its_reading_starts(
    table, owner, client, settings, django_capture_on_commit_callbacks
):
    """A busy server may reach a connection's first read after its whole time has passed
    (here: a time of none at all): it still reads once, so the turns written since it
    opened reach the page. Under load a page once got none of them."""
    settings.BABEL_LIVE_MAX_SECONDS = 0
    page = watch(client, owner, table)
    with django_capture_on_commit_callbacks(execute=True):
        turn = make_turn(table, content="The tide drops.")
    frames = parse_frames(read_live(page))
    turns = [f.data["turns"] for f in frames if f.event == "turn"]
    assert turns == [[turn.pk]]


def test_who_may_open_the_stream(table, owner, player, stranger, client):
    assert client.get(f"/campaigns/{table.pk}/live/").status_code == 401
    client.force_login(stranger)
    assert client.get(f"/campaigns/{table.pk}/live/").status_code == 404
    client.force_login(player)
    response = client.get(f"/campaigns/{table.pk}/live/?as=Cassia")  # a player's as: ignored
    assert response["Content-Type"].startswith("text/event-stream")
    hello = parse_frames(read_live(response))[0]
    assert hello.event == "hello" and len(hello.id.split(",")) == 2  # public + Thorin's own
    assert client.post(f"/campaigns/{table.pk}/live/").status_code == 405


def test_under_asgi_the_stream_is_served_by_the_event_loop(
    table, owner, player, gemini_standin, django_capture_on_commit_callbacks
):
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    gemini_standin.script([Reply(DM_NARRATION), Reply(THORIN_ACTS), Reply(CASSIA_ACTS)])
    gemini_standin.script([Reply(DM_ANSWERS)])
    client = AsyncClient()
    client.force_login(player)
    response = async_to_sync(client.get)(f"/campaigns/{table.pk}/live/")
    assert response.is_async  # an async generator, not a thread per connection
    play(table, owner, django_capture_on_commit_callbacks)

    async def read() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    frames = parse_frames(async_to_sync(read)())
    assert "Can I feel a draught under the door?" in texts(frames)
    assert "Let him go first." not in texts(frames)


def test_a_stream_that_breaks_midway_fails_its_step_once_and_its_drafts_are_withdrawn(
    table, owner, player, client, gemini_standin, django_capture_on_commit_callbacks
):
    from campaigns.models import RoundStep

    gemini_standin.chunk_words = 3
    gemini_standin.script([Reply(DM_NARRATION), "stream_break", Reply(CASSIA_ACTS)])
    thorin_page = watch(client, player, table)
    play(table, owner, django_capture_on_commit_callbacks)

    frames = parse_frames(read_live(thorin_page))
    thorin_drafts = [d for d in drafts_by_id(frames).values() if d["speaker"] == "Thorin"]
    assert thorin_drafts, "the first chunks were streamed before the break"
    withdrawn = {f.data["draft_id"] for f in frames if f.event == "withdrawn"}
    assert {d["draft_id"] for d in thorin_drafts} <= withdrawn
    step = RoundStep.objects.get(experiment=table, round=1, speaker="Thorin")
    assert step.status == "failed" and "stream broke" in step.detail["error"]
    # not asked again after its first words were shown; the round went on to Cassia
    assert len(gemini_standin.calls) == 3
    assert Turn.objects.filter(experiment=table, round=1, speaker="Cassia").exists()


@pytest.mark.django_db(transaction=True)
def test_under_uvicorn_a_page_that_hangs_up_ends_its_stream(campaign, owner):
    from django.test import Client

    from campaigns.console.views import live as view
    from campaigns.management.commands.bench_stream import _Page, _Server
    from campaigns.services import live

    client = Client()
    client.force_login(owner)
    server = _Server()
    port = server.start()
    try:
        cookie = f"sessionid={client.cookies['sessionid'].value}"
        page = _Page(port, f"/campaigns/{campaign.pk}/live/", cookie)
        page.start()
        assert page.ready.wait(10)
        live.publish(campaign.pk, ["all"], "progress", {"round": 1, "percent": 50})
        deadline = time.monotonic() + 5
        while not page.frames and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [f[1:3] for f in page.frames] == [("progress", {"round": 1, "percent": 50})]
        assert view.OPEN["async"] == 1
        page.stop()  # the tab closes
        deadline = time.monotonic() + 5
        while view.OPEN["async"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert view.OPEN["async"] == 0, "the server stopped streaming to the closed page"
    finally:
        server.stop()
