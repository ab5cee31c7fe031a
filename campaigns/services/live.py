"""Live channels (issue 25 ask 3): what a worker publishes while a model writes, and what
an SSE connection reads, one channel per audience of a campaign.

The channel keys come from `campaigns.reads.selectors` (`live_channels_for_audience` on
the publishing side, `audiences_for_viewer` on the reading side), so the fog of war is
decided in the same place as for every other read. This module only moves events.

Two brokers behind one small interface:

- `RedisBroker` (``REDIS_URL`` set): each channel is a Redis stream
  ``<BABEL_LIVE_PREFIX>:<campaign>:<channel>``, capped at `BACKLOG` entries (``XADD MAXLEN ~``)
  and expiring a day after its last event. A stream is a pub/sub with a backlog: a
  reader blocks on ``XREAD`` for all its channels at once from the positions it has
  seen, so a reconnect that says where it was resumes with nothing lost and nothing
  twice, and there is no window between "read the backlog" and "subscribe".
- `LocalBroker` (no Redis: Celery runs eagerly in the web process): the same in memory,
  a capped list per channel with a counter, and a condition to wake readers.

Positions are per channel — never one counter per campaign, whose gaps would count the
events of channels a player is not in (the noninterference rule of
`campaigns.reads.numbering`). An SSE event's id is the reader's positions joined
(`encode_positions`), which the browser sends back as ``Last-Event-ID``.

Publishing never raises into the relay: a broker that is down costs the live view, not
the round (logged).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings

log = logging.getLogger(__name__)

BACKLOG = 5000  # events kept per channel for resuming readers
TTL_SECONDS = 24 * 3600


def _prefix() -> str:
    """The channels' namespace (``BABEL_LIVE_PREFIX``; each test run has its own)."""
    return settings.BABEL_LIVE_PREFIX


@dataclass(frozen=True)
class Event:
    channel: str
    id: str  # the position in its channel, increasing
    event: str  # draft, draft_end, withdrawn, stored, progress
    data: dict


class Broker(Protocol):
    def publish(self, campaign_id: int, channels: Iterable[str], event: str, data: dict) -> None:
        """Append one event to each of ``channels``."""

    def heads(self, campaign_id: int, channels: list[str]) -> dict[str, str]:
        """Each channel's newest position (what a fresh reader starts after)."""

    def read(self, campaign_id: int, positions: dict[str, str], timeout: float) -> list[Event]:
        """Events after ``positions``, in order per channel; waits up to ``timeout``
        seconds for the first one. Blocking: for sync callers."""

    async def aread(
        self, campaign_id: int, positions: dict[str, str], timeout: float
    ) -> list[Event]:
        """`read` for the event loop."""

    def close(self) -> None: ...


def _decode(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


class RedisBroker:
    """Channels as capped Redis streams (see the module docstring)."""

    def __init__(self, url: str):
        import redis

        self.url = url
        # Publishing is bounded (a hung Redis must not hold a round up for long); a
        # blocking XREAD has its own bound (``block``), which the socket must outlast.
        self._redis = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self._reader = redis.Redis.from_url(url, socket_timeout=None, socket_connect_timeout=5)
        self._async: dict[int, Any] = {}  # per event loop (id), an asyncio client

    def key(self, campaign_id: int, channel: str) -> str:
        return f"{_prefix()}:{campaign_id}:{channel}"

    def publish(self, campaign_id: int, channels: Iterable[str], event: str, data: dict) -> None:
        payload = {"e": event, "d": json.dumps(data, separators=(",", ":"))}
        pipe = self._redis.pipeline(transaction=False)
        for channel in channels:
            key = self.key(campaign_id, channel)
            pipe.xadd(key, payload, maxlen=BACKLOG, approximate=True)
            pipe.expire(key, TTL_SECONDS)
        pipe.execute()

    def heads(self, campaign_id: int, channels: list[str]) -> dict[str, str]:
        pipe = self._redis.pipeline(transaction=False)
        for channel in channels:
            pipe.xrevrange(self.key(campaign_id, channel), count=1)
        found = pipe.execute()
        return {
            channel: _decode(rows[0][0]) if rows else "0-0"
            for channel, rows in zip(channels, found, strict=True)
        }

    def backlog(self, campaign_id: int, channel: str, count: int) -> list[Event]:
        rows = self._redis.xrevrange(self.key(campaign_id, channel), count=count)
        return self._events(campaign_id, [(self.key(campaign_id, channel), rows[::-1])])

    def _events(self, campaign_id: int, answer: Any) -> list[Event]:
        prefix = f"{_prefix()}:{campaign_id}:"
        events = []
        for key, rows in answer or []:
            channel = _decode(key).removeprefix(prefix)
            for entry_id, fields in rows:
                fields = {_decode(k): _decode(v) for k, v in fields.items()}
                events.append(
                    Event(channel, _decode(entry_id), fields["e"], json.loads(fields["d"]))
                )
        return events

    def _streams(self, campaign_id: int, positions: dict[str, str]) -> dict[str, str]:
        return {self.key(campaign_id, ch): pos for ch, pos in positions.items()}

    def read(self, campaign_id: int, positions: dict[str, str], timeout: float) -> list[Event]:
        answer = self._reader.xread(
            self._streams(campaign_id, positions), count=500, block=max(1, int(timeout * 1000))
        )
        return self._events(campaign_id, answer)

    async def aread(
        self, campaign_id: int, positions: dict[str, str], timeout: float
    ) -> list[Event]:
        client = await self._async_client()
        answer = await client.xread(
            self._streams(campaign_id, positions), count=500, block=max(1, int(timeout * 1000))
        )
        return self._events(campaign_id, answer)

    async def _async_client(self):
        import redis.asyncio as aredis

        loop = id(asyncio.get_running_loop())
        client = self._async.get(loop)
        if client is None:
            client = self._async[loop] = aredis.Redis.from_url(
                self.url, socket_timeout=None, socket_connect_timeout=5
            )
        return client

    def close(self) -> None:
        self._redis.close()
        self._reader.close()


class LocalBroker:
    """Channels in this process's memory (Celery eager, no Redis): same contract."""

    def __init__(self, backlog: int = BACKLOG):
        self.size = backlog
        self._channels: dict[tuple[str, int, str], deque[Event]] = {}
        self._counters: dict[tuple[str, int, str], int] = {}
        self._changed = threading.Condition()

    def publish(self, campaign_id: int, channels: Iterable[str], event: str, data: dict) -> None:
        data = json.loads(json.dumps(data))  # what a reader gets is a copy, as from Redis
        with self._changed:
            for channel in channels:
                slot = (_prefix(), campaign_id, channel)
                number = self._counters.get(slot, 0) + 1
                self._counters[slot] = number
                queue = self._channels.setdefault(slot, deque(maxlen=self.size))
                queue.append(Event(channel, f"{number}-0", event, data))
            self._changed.notify_all()

    def heads(self, campaign_id: int, channels: list[str]) -> dict[str, str]:
        with self._changed:
            return {
                ch: f"{self._counters.get((_prefix(), campaign_id, ch), 0)}-0" for ch in channels
            }

    def backlog(self, campaign_id: int, channel: str, count: int) -> list[Event]:
        with self._changed:
            return list(self._channels.get((_prefix(), campaign_id, channel), ()))[-count:]

    def _after(self, campaign_id: int, positions: dict[str, str]) -> list[Event]:
        events = []
        for channel, position in positions.items():
            seen = _number(position)
            for item in self._channels.get((_prefix(), campaign_id, channel), ()):
                if _number(item.id) > seen:
                    events.append(item)
        return events

    def read(self, campaign_id: int, positions: dict[str, str], timeout: float) -> list[Event]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                events = self._after(campaign_id, positions)
                left = deadline - time.monotonic()
                if events or left <= 0:
                    return events
                self._changed.wait(left)

    async def aread(
        self, campaign_id: int, positions: dict[str, str], timeout: float
    ) -> list[Event]:
        """Polled every 20 ms: the in-process broker serves development and tests."""
        deadline = time.monotonic() + timeout
        while True:
            with self._changed:
                events = self._after(campaign_id, positions)
            if events or time.monotonic() >= deadline:
                return events
            await asyncio.sleep(0.02)

    def close(self) -> None:
        pass


def _number(position: str) -> int:
    try:
        return int(position.split("-", 1)[0])
    except ValueError:
        return 0


_broker: Broker | None = None
_broker_url: str | None = None
_lock = threading.Lock()


def broker() -> Broker:
    """The process's broker: Redis when ``REDIS_URL`` is set, else in memory."""
    global _broker, _broker_url
    url = settings.REDIS_URL or ""
    with _lock:
        if _broker is None or _broker_url != url:
            _broker = RedisBroker(url) if url else LocalBroker()
            _broker_url = url
        return _broker


def publish(campaign_id: int, channels: Iterable[str], event: str, data: dict) -> None:
    """Publish to ``channels``; a broker failure is logged, never raised (the round goes
    on without its live view)."""
    channels = list(dict.fromkeys(channels))
    if not channels:
        return
    try:
        broker().publish(campaign_id, channels, event, data)
    except Exception:
        log.exception("live event %s for campaign %s not published", event, campaign_id)


# -- where a reader starts ------------------------------------------------------------------

OPEN_DRAFT_SCAN = 500  # events of each channel looked at for drafts still being written
_CLOSING = ("stored", "withdrawn")


def start_positions(broker: Broker, campaign_id: int, channels: list[str]) -> dict[str, str]:
    """Where a fresh reader (no ``Last-Event-ID``) starts in each channel: just before the
    first event of a draft still open there (not yet stored or withdrawn), so a page
    opened mid-answer gets that answer from its first word; else after the newest event.
    Only the newest `OPEN_DRAFT_SCAN` events count (a draft whose step died is forgotten)."""
    positions = {}
    for channel in channels:
        events = broker.backlog(campaign_id, channel, OPEN_DRAFT_SCAN)
        closed = {e.data.get("draft_id") for e in events if e.event in _CLOSING}
        start = events[-1].id if events else "0-0"
        for event in events:
            if event.event == "draft" and event.data.get("draft_id") not in closed:
                start = _before(event.id)
                break
        positions[channel] = start
    return positions


def _before(position: str) -> str:
    """The position just before ``position`` (``ms-seq`` stream ids)."""
    first, _, second = position.partition("-")
    major, minor = int(first), int(second or 0)
    if minor > 0:
        return f"{major}-{minor - 1}"
    return f"{max(0, major - 1)}-18446744073709551615" if major > 0 else "0-0"


# -- positions as an SSE event id ---------------------------------------------------------


def encode_positions(channels: list[str], positions: dict[str, str]) -> str:
    """The reader's positions as one event id, in its channels' order."""
    return ",".join(positions[ch] for ch in channels)


def decode_positions(channels: list[str], raw: str | None) -> dict[str, str] | None:
    """Positions from a ``Last-Event-ID`` for these channels, or None when it is absent
    or not one of ours (another viewer's, a tampered value): the reader starts live."""
    if not raw:
        return None
    parts = raw.strip().split(",")
    if len(parts) != len(channels):
        return None
    positions = {}
    for channel, part in zip(channels, parts, strict=True):
        pieces = part.split("-")
        if len(pieces) != 2 or not all(p.isdigit() and len(p) <= 20 for p in pieces):
            return None
        positions[channel] = part
    return positions
