"""Live streaming (issue 25): `manage.py bench_stream [--trials 5] [--campaigns 5] [--pages 20]`.

Serves the site under ASGI (uvicorn, in this process) and streams answers the way a relay
step does — the real openai SDK reading a streaming OpenAI-compatible stand-in
(``tests.standins``, a fixed delay before the first chunk and between chunks), each chunk
given to a `StepStream` (parts, audiences, the output guard), published on the broker
(Redis with ``REDIS_URL``, else in memory) — to pages reading the SSE endpoint over HTTP.

1. **First token.** The time from the model sending a chunk to a page receiving it as a
   draft: for a monologue (not guarded: its first word) and for a public answer (guarded:
   the guard can release its first word once it has seen the next seven, so it is timed
   from the model's eighth word). Target: ≤ 300 ms.
2. **Load.** ``--pages`` pages per campaign (the owner, as everything or as each role, in
   turn) on ``--campaigns`` campaigns whose answers all stream at once, one server
   process; a quarter of the pages hang up halfway and reconnect with ``Last-Event-ID``.
   Every page's drafts are compared with what it was entitled to: lost and duplicated
   pieces are counted (target 0).

Campaigns and users are created, committed (the server reads them on its own
connections) and deleted at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import logging
import statistics
import threading
import time
import uuid

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.test import Client

from campaigns.models import Experiment
from campaigns.reads import selectors
from campaigns.reads.selectors import OWNER
from campaigns.services import live
from campaigns.services.experiments import experiment_create, participant_create
from campaigns.services.relay.streaming import StepStream
from context_engine.llm.openai_compat import OpenAICompatibleClient

ROLES = ("DM", "Thorin", "Cassia")
AS_ROLES = ("", "DM", "Thorin", "Cassia")
WORDS = [
    "the",
    "tide",
    "pulls",
    "back",
    "from",
    "the",
    "drowned",
    "stair",
    "and",
    "Cassia",
    "counts",
    "the",
    "bells",
    "while",
    "the",
    "lantern",
    "gutters",
    "over",
    "black",
    "water",
    "and",
    "somewhere",
    "below",
    "a",
    "door",
    "groans",
    "open",
]


def _body(words: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(words))


def _answer(words: int) -> str:
    body = _body(words)
    return f"MONOLOGUE: {body}\nPUBLIC: {body}\nWHISPER to Thorin: {body}\nGM NOTE: {body}\n"


class _Page(threading.Thread):
    """An EventSource over HTTP: frames with their arrival times; can hang up and resume."""

    def __init__(self, port: int, path: str, cookie: str, *, hang_up_after: int = 0):
        super().__init__(daemon=True)
        self.port, self.path, self.cookie = port, path, cookie
        self.hang_up_after = hang_up_after
        self.frames: list[tuple[float, str, dict, str]] = []  # (at, event, data, id)
        self.ready = threading.Event()
        self.done = threading.Event()
        self.reconnects = 0
        self._response = None

    def run(self) -> None:
        last_id = ""
        while not self.done.is_set():
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            headers = {"Cookie": self.cookie}
            if last_id:
                headers["Last-Event-ID"] = last_id
            connection.request("GET", self.path, headers=headers)
            response = self._response = connection.getresponse()
            block: list[str] = []
            hung_up = False
            while not self.done.is_set():
                line = response.fp.readline()
                if not line:
                    break
                text = line.decode().rstrip("\n")
                if text:
                    block.append(text)
                    continue
                fields = dict(
                    f.split(": ", 1) for f in block if not f.startswith(":") and ": " in f
                )
                block = []
                if "event" not in fields:
                    continue
                last_id = fields.get("id", last_id)
                if fields["event"] == "hello":
                    self.ready.set()
                    continue
                self.frames.append(
                    (time.monotonic(), fields["event"], json.loads(fields["data"]), last_id)
                )
                drafts = sum(1 for f in self.frames if f[1] == "draft")
                if self.hang_up_after and drafts == self.hang_up_after and not self.reconnects:
                    hung_up = True
                    break
            connection.close()
            if not hung_up:
                return
            self.reconnects += 1

    def stop(self) -> None:
        self.done.set()
        response = self._response
        if response is not None and response.fp is not None:
            with contextlib.suppress(OSError):
                response.fp.raw._sock.shutdown(2)  # as a closed tab: the socket goes

    def drafts(self) -> dict[str, list[tuple[int, str]]]:
        found: dict[str, list[tuple[int, str]]] = {}
        for _at, event, data, _id in self.frames:
            if event == "draft":
                found.setdefault(data["draft_id"], []).append((data["seq"], data["text"]))
        return found


class _Server:
    """The site under uvicorn in a thread of this process (its own event loop)."""

    def __init__(self):
        import uvicorn

        from babel_site.asgi import application

        self.config = uvicorn.Config(
            application, host="127.0.0.1", port=0, log_level="warning", lifespan="off"
        )
        self.server = uvicorn.Server(self.config)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.run(self.server.serve())

    def start(self) -> int:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise CommandError("uvicorn did not start")
            time.sleep(0.05)
        return self.server.servers[0].sockets[0].getsockname()[1]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class Command(BaseCommand):
    help = "Time the first streamed token at an SSE page and count lost/duplicated chunks."

    def add_arguments(self, parser):
        parser.add_argument("--trials", type=int, default=5)
        parser.add_argument("--campaigns", type=int, default=5)
        parser.add_argument("--pages", type=int, default=20)
        parser.add_argument("--words", type=int, default=30, help="Words in each part (≥ 8).")
        parser.add_argument("--first-delay", type=float, default=0.5)
        parser.add_argument("--chunk-delay", type=float, default=0.05)

    def handle(self, *args, trials, campaigns, pages, words, first_delay, chunk_delay, **opts):
        # Pages hang up on purpose; asyncio's note about the writes already queued to them
        # ("socket.send() raised exception.") is not news here.
        logging.getLogger("asyncio").setLevel(logging.ERROR)
        try:
            from tests.standins.openai_api import OpenAIStandin
        except ImportError as exc:  # pragma: no cover - the stand-ins ship with the repo
            raise CommandError(f"The stand-in model servers are needed: {exc}") from exc
        # Its own channels, removed at the end: no real campaign ever reads its drafts.
        settings.BABEL_LIVE_PREFIX = f"{settings.BABEL_LIVE_PREFIX}:bench-{uuid.uuid4().hex}"
        user = get_user_model().objects.create_user(username=f"bench-stream-{time.time_ns()}")
        experiments = [self._campaign(user, n) for n in range(max(1, campaigns))]
        standin = OpenAIStandin(default="ok").start()
        standin.first_chunk_delay, standin.chunk_delay = first_delay, chunk_delay
        server = _Server()
        try:
            port = server.start()
            client = Client()
            client.force_login(user)
            cookie = f"sessionid={client.cookies['sessionid'].value}"
            broker = type(live.broker()).__name__
            self.stdout.write(
                f"broker: {broker}; model: first chunk after {first_delay:g}s, then a word "
                f"every {chunk_delay * 1000:g} ms; server: uvicorn (ASGI), one process"
            )
            self._first_token(standin, experiments[0], port, cookie, trials, words)
            self._load(standin, experiments, port, cookie, pages, words)
        finally:
            server.stop()
            standin.stop()
            Experiment.objects.filter(pk__in=[e.pk for e in experiments]).delete()
            user.delete()
            broker = live.broker()
            if isinstance(broker, live.RedisBroker):
                for key in broker._redis.scan_iter(match=f"{settings.BABEL_LIVE_PREFIX}:*"):
                    broker._redis.delete(key)

    # -- setup ---------------------------------------------------------------------------
    def _campaign(self, user, number: int) -> Experiment:
        experiment = experiment_create(
            name=f"bench_stream {number} {time.time_ns()}", hook="A drowned stair.", owner=user
        )
        for order, role in enumerate(ROLES):
            participant_create(
                experiment=experiment,
                role=role,
                kind="dm" if role == "DM" else "player",
                order=order,
                model="openai:local",
            )
        return experiment

    def _stream_step(self, standin, experiment, speaker: str, text: str) -> StepStream:
        """One streamed model call, as `_Steps._call` makes it."""
        participant = experiment.participants.get(role=speaker)
        stream = StepStream(
            experiment=experiment,
            round_=1,
            step="act",
            participant=participant,
            roles=ROLES,
            dm_roles=("DM",),
        )
        model = OpenAICompatibleClient(model="local", base_url=standin.base_url, timeout_seconds=60)
        standin.script([_reply(text)])
        model.stream_with_usage([{"role": "user", "content": "act"}], on_text=stream.on_text)
        stream.finish()
        return stream

    # -- 1. first token --------------------------------------------------------------------
    def _first_token(self, standin, experiment, port, cookie, trials, words):
        unguarded, guarded = [], []
        for _ in range(max(1, trials)):
            page = _Page(port, f"/campaigns/{experiment.pk}/live/", cookie)
            page.start()
            page.ready.wait(10)
            with standin._lock:
                standin.chunk_times.clear()
            text = f"MONOLOGUE: {_body(words)}\nPUBLIC: {_body(words)}\n"
            stream = self._stream_step(standin, experiment, "Cassia", text)
            time.sleep(0.3)
            page.stop()
            sent = list(standin.chunk_times)
            ids = {d.part.kind: d.id for d in stream.drafts.values()}

            def first(draft_id, page=page):
                return min(
                    at
                    for at, ev, data, _ in page.frames
                    if ev == "draft" and data["draft_id"] == draft_id
                )

            # chunk 0 is "MONOLOGUE: ", chunk 1 its first word; the public part's label is
            # chunk words+1 and its eighth word chunk words+9 (the guard's first release)
            unguarded.append(first(ids["monologue"]) - sent[1])
            guarded.append(first(ids["action"]) - sent[words + 9])
        self.stdout.write("\n1. first streamed token at the page, after the model sent it")
        for name, values in (("monologue (unguarded)", unguarded), ("public (guarded)", guarded)):
            ms = [v * 1000 for v in values]
            self.stdout.write(
                f"   {name:22} median {statistics.median(ms):6.1f} ms   max {max(ms):6.1f} ms"
                f"   ({len(ms)} trials; target ≤ 300 ms)"
            )

    # -- 2. load -----------------------------------------------------------------------------
    def _load(self, standin, experiments, port, cookie, pages, words):
        open_pages: list[tuple[Experiment, str, _Page]] = []
        for experiment in experiments:
            for n in range(pages):
                as_role = AS_ROLES[n % len(AS_ROLES)]
                path = f"/campaigns/{experiment.pk}/live/" + (f"?as={as_role}" if as_role else "")
                page = _Page(port, path, cookie, hang_up_after=5 if n % 4 == 1 else 0)
                page.start()
                open_pages.append((experiment, as_role, page))
        for _e, _r, page in open_pages:
            page.ready.wait(20)
        started = time.monotonic()
        streams: dict[int, list[StepStream]] = {}
        errors: list[BaseException] = []

        def play(experiment):
            try:
                streams[experiment.pk] = [
                    self._stream_step(standin, experiment, speaker, _answer(words))
                    for speaker in ("DM", "Thorin")
                ]
            except BaseException as exc:
                errors.append(exc)

        players = [threading.Thread(target=play, args=(e,)) for e in experiments]
        for thread in players:
            thread.start()
        for thread in players:
            thread.join()
        if errors:
            raise CommandError(f"a stream failed: {errors[0]!r}")
        elapsed = time.monotonic() - started
        time.sleep(1.0)  # the last events reach the pages
        for _e, _r, page in open_pages:
            page.stop()
        lost = duplicated = pieces = expected_drafts = 0
        for experiment, as_role, page in open_pages:
            viewer = (
                selectors.viewer_for_role(experiment=experiment, role=as_role) if as_role else OWNER
            )
            mine = set(selectors.audiences_for_viewer(viewer))
            got = page.drafts()
            for stream in streams[experiment.pk]:
                for draft in stream.drafts.values():
                    if not draft.seq or not mine & set(draft.channels):
                        continue
                    expected_drafts += 1
                    received = got.get(draft.id, [])
                    seqs = [seq for seq, _ in received]
                    pieces += len(seqs)
                    duplicated += len(seqs) - len(set(seqs))
                    lost += len(set(range(1, draft.seq + 1)) - set(seqs))
                    text = "".join(t for _, t in sorted(set(received)))
                    if text != draft.text and set(seqs) == set(range(1, draft.seq + 1)):
                        lost += 1  # every piece came, yet the text differs
        reconnects = sum(page.reconnects for _e, _r, page in open_pages)
        self.stdout.write(
            f"\n2. load: {len(experiments)} campaigns × {pages} pages = {len(open_pages)} pages, "
            f"2 answers per campaign streamed at once in {elapsed:.1f} s"
        )
        self.stdout.write(
            f"   drafts expected {expected_drafts}, pieces received {pieces}, "
            f"reconnects (Last-Event-ID) {reconnects}"
        )
        self.stdout.write(f"   lost {lost}   duplicated {duplicated}   (target 0 and 0)")
        if lost or duplicated:
            raise CommandError("chunks were lost or duplicated")


def _reply(text: str):
    from tests.standins.server import Reply

    return Reply(text=text)
