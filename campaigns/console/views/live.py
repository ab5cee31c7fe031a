"""Watch a round live (issue 25): one server-sent-events stream per campaign.

``GET /campaigns/<id>/live/`` (console session; ``?as=ROLE`` for the owner) answers
``text/event-stream`` with the drafts of the answers being written, on exactly the live
channels the viewer reads (`selectors.audiences_for_viewer`: a player never subscribes
to an audience they are not in; ``?as=`` picks that role's channels, nothing more). The
only async view of the site: under ASGI it waits on the broker without holding a thread;
under WSGI (the dev server, the tests' live server) the same stream is a blocking
generator. Either way a connection ends after `MAX_SECONDS` and the browser reconnects.

The contract (what the console's JavaScript builds on):

- Every event has an ``id``: the reader's positions in its channels. The browser sends
  the last one back as ``Last-Event-ID`` when it reconnects (``?last_event_id=`` works
  too) and the stream resumes after it, nothing lost and nothing twice. An id that is
  not this viewer's (another role's, tampered) starts the stream live.
- ``event: hello`` first (``data: {}``), so even a quiet stream has an id to resume from.
  A fresh connection (no ``Last-Event-ID``) starts at the first event of any draft still
  being written, so a page opened mid-answer gets that answer from its first word.
- ``event: draft`` — ``{"draft_id", "round", "step", "speaker", "kind", "audience",
  "text", "seq"}``: ``text`` is the next piece of that draft (append it); ``seq`` counts
  a draft's pieces from 1. ``kind`` is the turn kind it will be stored as (``action``,
  ``narrative``, ``whisper``, ``monologue``, ``gm_note``); ``audience`` is null (public)
  or the roles reading it. ``"held": true`` on the reviewers' copy of a draft the output
  guard held (the DM side, the owner). One answer may open several drafts (its parts).
- ``event: draft_end`` — ``{"draft_id"}``: the model finished writing that answer.
- ``event: withdrawn`` — ``{"draft_id"}``: remove it (held by the guard — players never
  get the held text —, its call failed, or the answer is being asked again).
- ``event: stored`` — ``{"draft_id"}`` (+ ``"turns": [ids]`` for omniscient readers): the
  step is stored; reload the timeline, whose turns replace the draft.
- ``event: progress`` — ``{"round", "percent"}`` (+ ``"message"``, e.g. "Round 16:
  Cassia acting…", for the owner): the round bar.
- ``event: turn`` — ``{}`` (``{"turns": [ids]}`` for omniscient readers): a turn this
  viewer reads was stored or changed outside a model's step (a human's post, a DM's note
  or whisper, an edit, a reveal, a held turn published or discarded); reload the timeline
  and the round bar. Sent only on the channels of the turn's readers (before and after
  the change), after its transaction commits (`campaigns.services.live_turns`).
- ``event: waiting`` — ``{"round", "role"}``: the round now waits for that human's post
  (every viewer: the round bar tells everyone whom the round waits for); reload the
  round bar, which says "Your turn" to that human.
- ``: keep-alive`` comment lines every `HEARTBEAT_SECONDS`.

Drafts carry no turn id, position or count a player could not otherwise see: draft ids
are random, positions are per channel.
"""

from __future__ import annotations

import json
import time

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import connection
from django.http import HttpResponse, HttpResponseNotAllowed, StreamingHttpResponse

from campaigns.console import access as console_access
from campaigns.reads import selectors
from campaigns.services import live

HEARTBEAT_SECONDS = 15.0


def _max_seconds() -> float:
    return float(settings.BABEL_LIVE_MAX_SECONDS)


def _subscription(request, pk) -> tuple[int, list[str]]:
    """The campaign and the viewer's channels (404/403 as every console page)."""
    try:
        access = console_access.experiment_for(request, pk)
        viewer, _as_role = console_access.viewer_for(request, access)
        return access.experiment.pk, selectors.audiences_for_viewer(viewer)
    finally:
        # The stream reads no more rows: a connection held for its whole life (minutes)
        # would be one database connection per open page. (Inside a test's transaction
        # the connection is the test's own and stays.)
        if not connection.in_atomic_block:
            connection.close()


def _frame(event: str, data: dict, event_id: str) -> bytes:
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"id: {event_id}\nevent: {event}\ndata: {body}\n\n".encode()


def _order(events: list[live.Event]) -> list[live.Event]:
    """Several channels' events in publish order (positions are time-ordered per broker)."""

    def key(event: live.Event) -> tuple[int, int]:
        first, _, second = event.id.partition("-")
        return (int(first), int(second or 0))

    return sorted(events, key=key)


class _Reader:
    """One connection's place in its channels."""

    def __init__(self, campaign: int, channels: list[str], positions: dict[str, str]):
        self.campaign = campaign
        self.channels = channels
        self.positions = positions

    def frames(self, events: list[live.Event]) -> list[bytes]:
        out = []
        for event in _order(events):
            self.positions[event.channel] = event.id
            out.append(_frame(event.event, event.data, self.event_id))
        return out

    @property
    def event_id(self) -> str:
        return live.encode_positions(self.channels, self.positions)


def _going_on(started: float, last_read: list) -> bool:
    """A connection ends after `_max_seconds`, at a quiet moment (its last read found
    nothing: not in the middle of an answer), and in any case at twice that."""
    age = time.monotonic() - started
    return age < _max_seconds() or (bool(last_read) and age < 2 * _max_seconds())


def _wait(started: float) -> float:
    """How long the next read may wait: to the next heartbeat or the connection's end."""
    left = _max_seconds() - (time.monotonic() - started)
    return max(0.05, min(HEARTBEAT_SECONDS, left))


OPEN = {"async": 0, "sync": 0}  # connections being served (a disconnect ends its own)


async def _async_stream(reader: _Reader, broker: live.Broker):
    OPEN["async"] += 1
    try:
        yield b"retry: 2000\n\n" + _frame("hello", {}, reader.event_id)
        started = last = time.monotonic()
        while True:  # at least one read: what is waiting is sent however late it starts
            wait = _wait(started)
            events = await broker.aread(reader.campaign, dict(reader.positions), wait)
            for frame in reader.frames(events):
                yield frame
            if not events or time.monotonic() - last >= HEARTBEAT_SECONDS:
                yield b": keep-alive\n\n"
            last = time.monotonic()
            if not _going_on(started, events):
                break
    finally:
        OPEN["async"] -= 1


def _sync_stream(reader: _Reader, broker: live.Broker):
    OPEN["sync"] += 1
    try:
        yield b"retry: 2000\n\n" + _frame("hello", {}, reader.event_id)
        started = last = time.monotonic()
        while True:  # at least one read, as `_async_stream`
            events = broker.read(reader.campaign, dict(reader.positions), _wait(started))
            yield from reader.frames(events)
            if not events or time.monotonic() - last >= HEARTBEAT_SECONDS:
                yield b": keep-alive\n\n"
            last = time.monotonic()
            if not _going_on(started, events):
                break
    finally:
        OPEN["sync"] -= 1


async def live_stream(request, pk):
    """The campaign's live events for this viewer (see the module docstring)."""
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET"])
    user = await request.auser()
    if not user.is_authenticated:
        return HttpResponse(
            "Sign in to watch this campaign.", status=401, content_type="text/plain"
        )
    campaign, channels = await sync_to_async(_subscription)(request, pk)
    broker = live.broker()
    raw = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id")
    positions = live.decode_positions(channels, raw)
    if positions is None:
        positions = await sync_to_async(live.start_positions)(broker, campaign, channels)
    reader = _Reader(campaign, channels, positions)
    if isinstance(request, ASGIRequest):
        body = _async_stream(reader, broker)
    else:  # WSGI: a blocking generator on the request's thread
        body = _sync_stream(reader, broker)
    response = StreamingHttpResponse(body, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache, no-transform"
    response["X-Accel-Buffering"] = "no"  # a buffering proxy would hold the drafts back
    return response
