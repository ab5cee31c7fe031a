"""The live channels (issue 25 ask 3): both brokers deliver every event once, in order,
resume from a reader's positions without loss or duplicates, and keep channels apart."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from campaigns.reads import selectors
from campaigns.reads.selectors import OWNER, Viewer
from campaigns.services import live
from tests.services import redis_reachable, unavailable


@pytest.fixture(params=["local", "redis"])
def broker(request):
    if request.param == "local":
        yield live.LocalBroker()
        return
    url = os.environ.get("REDIS_URL")
    if not url:
        unavailable("REDIS_URL is not set")
    if not redis_reachable(url):
        unavailable(f"Redis is not reachable at {url}")
    found = live.RedisBroker(url)
    yield found
    found.close()


def campaign_id() -> int:
    return uuid.uuid4().int % 10**9  # a fresh campaign's channels in a shared Redis db


def test_a_reader_gets_every_event_of_its_channels_once_in_order(broker):
    cid = campaign_id()
    start = broker.heads(cid, ["public", "role:Cassia"])
    for n in range(5):
        broker.publish(cid, ["public"], "draft", {"n": n})
    broker.publish(cid, ["role:Thorin"], "draft", {"secret": True})
    broker.publish(cid, ["role:Cassia"], "draft", {"n": 99})
    events = broker.read(cid, start, timeout=0.2)
    assert [e.data for e in events if e.channel == "public"] == [{"n": n} for n in range(5)]
    assert [e.data for e in events if e.channel == "role:Cassia"] == [{"n": 99}]
    assert all(e.channel in ("public", "role:Cassia") for e in events)


def test_a_reconnect_resumes_after_its_last_event_without_loss_or_duplicates(broker):
    cid = campaign_id()
    channels = ["public", "role:Cassia"]
    positions = broker.heads(cid, channels)
    for n in range(10):
        broker.publish(cid, [channels[n % 2]], "draft", {"n": n})
    first = broker.read(cid, positions, timeout=0.2)[:4]  # the page saw some, then dropped
    seen = dict(positions)
    for event in first:
        seen[event.channel] = event.id
    last_event_id = live.encode_positions(channels, seen)
    for n in range(10, 14):
        broker.publish(cid, [channels[n % 2]], "draft", {"n": n})
    resumed = live.decode_positions(channels, last_event_id)
    rest = broker.read(cid, resumed, timeout=0.2)
    got = sorted(e.data["n"] for e in [*first, *rest])
    assert got == list(range(14))


def test_a_reader_waits_for_the_next_event(broker):
    cid = campaign_id()
    positions = broker.heads(cid, ["public"])
    timer = threading.Timer(0.2, lambda: broker.publish(cid, ["public"], "progress", {"m": "x"}))
    timer.start()
    events = broker.read(cid, positions, timeout=5)
    timer.join()
    assert [e.data for e in events] == [{"m": "x"}]


def run_apart(coroutine):
    """Run ``coroutine`` on an event loop of its own thread: the browser tests' Playwright
    keeps a loop running in this thread for the rest of the session."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def test_the_async_read_gets_the_same_events(broker):
    cid = campaign_id()
    positions = broker.heads(cid, ["public"])
    broker.publish(cid, ["public"], "draft", {"n": 1})
    events = run_apart(broker.aread(cid, positions, timeout=1))
    assert [e.data for e in events] == [{"n": 1}]
    assert run_apart(broker.aread(cid, {"public": events[-1].id}, timeout=0.1)) == []


def test_a_foreign_or_tampered_last_event_id_starts_the_reader_live():
    channels = ["public", "role:Cassia"]
    assert live.decode_positions(channels, "3-0") is None
    assert live.decode_positions(channels, "3-0,x-1") is None
    assert live.decode_positions(channels, "") is None
    assert live.decode_positions(channels, "3-0,17-2") == {"public": "3-0", "role:Cassia": "17-2"}


def test_viewers_subscribe_to_disjoint_channels_of_their_own_audiences():
    player = Viewer(role="Cassia")
    dm_seat = Viewer(role="DM", is_dm=True, reviews_held=True)
    judge = Viewer(role="Judge", omniscient=True)
    assert selectors.audiences_for_viewer(player) == ["public", "role:Cassia"]
    assert selectors.audiences_for_viewer(dm_seat) == ["public", "role:DM", "held:DM"]
    assert selectors.audiences_for_viewer(judge) == ["all"]
    assert selectors.audiences_for_viewer(OWNER) == ["all", "owner"]
    whisper = selectors.live_channels_for_audience(("Cassia", "DM"))
    assert whisper == ["all", "role:Cassia", "role:DM"]
    assert selectors.live_channels_for_audience(None) == ["all", "public"]
    # nobody's subscription overlaps itself on one event: every event reaches a page once
    for viewer in (player, dm_seat, judge, OWNER):
        mine = set(selectors.audiences_for_viewer(viewer))
        for targets in (whisper, selectors.live_channels_for_audience(None)):
            assert len(mine & set(targets)) <= 1


def test_a_page_opened_mid_answer_gets_the_open_draft_from_its_first_word(broker):
    cid = campaign_id()

    def draft(draft_id, seq, text):
        data = {"draft_id": draft_id, "seq": seq, "text": text}
        broker.publish(cid, ["public"], "draft", data)

    draft("old", 1, "Long ago ")
    broker.publish(cid, ["public"], "stored", {"draft_id": "old"})
    draft("new", 1, "The tide ")
    broker.publish(cid, ["public"], "progress", {"round": 2, "percent": 40})
    draft("new", 2, "turns.")
    start = live.start_positions(broker, cid, ["public"])
    events = broker.read(cid, start, timeout=0.2)
    assert [(e.event, e.data.get("text")) for e in events] == [
        ("draft", "The tide "),
        ("progress", None),
        ("draft", "turns."),
    ]
    broker.publish(cid, ["public"], "stored", {"draft_id": "new"})
    fresh = live.start_positions(broker, cid, ["public"])
    assert broker.read(cid, fresh, timeout=0.1) == []  # nothing open: start at the newest
