"""Watching a round live on real services (issue 25): a real Celery worker plays the round
from real Redis, its model (the Gemini stand-in, through the real SDK) streams slowly, and
a page's SSE connection to the live server receives each answer's drafts while the worker
is still writing them — before the step is stored — through Redis."""

from __future__ import annotations

import http.client
import threading
import time

import pytest
from django.test import Client

from campaigns.models import Job, Turn
from campaigns.services.experiments import experiment_update
from campaigns.services.relay import round_start
from tests.campaigns.services.test_relay_models import (
    CASSIA_ACTS,
    DM_ANSWERS,
    DM_NARRATION,
    MODEL,
)
from tests.integration.test_memory_worker import default_queue, gemini_env
from tests.integration.worker import celery_worker, wait_for
from tests.live_support import drafts_by_id, parse_frames
from tests.standins.server import Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

# Longer than the guard's window, so its first words are released before its last ones.
THORIN_PUBLIC = (
    "Thorin dives off the pier, kicks down past the weed and swims for the groaning door."
)
THORIN_ACTS = f"PUBLIC: {THORIN_PUBLIC}\nWHISPER to DM: Can I feel a draught under the door?"


class Page(threading.Thread):
    """A browser's EventSource: reads the stream, noting when each event arrived."""

    def __init__(self, host: str, port: int, path: str, cookie: str):
        super().__init__(daemon=True)
        self.host, self.port, self.path, self.cookie = host, port, path, cookie
        self.raw = b""
        self.timed: list[tuple[float, object]] = []  # (arrival, Frame)
        self.stop = threading.Event()
        self.opened = threading.Event()
        self.status = 0

    def run(self) -> None:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        connection.request("GET", self.path, headers={"Cookie": self.cookie})
        response = self.response = connection.getresponse()
        self.status = response.status
        self.opened.set()
        block = b""
        while not self.stop.is_set():
            line = response.fp.readline()
            if not line:
                break
            self.raw += line
            block += line
            if line == b"\n":
                self.timed += [(time.monotonic(), f) for f in parse_frames(block)]
                block = b""
        connection.close()

    def hang_up(self) -> None:
        self.stop.set()
        self.response.fp.raw._sock.shutdown(2)  # as a closed tab: the socket goes

    def count(self, event: str) -> int:
        return sum(1 for _at, f in self.timed if f.event == event)


def test_a_page_receives_the_drafts_while_the_worker_writes_them(
    real_services, campaign, owner, player, gemini_standin, live_server, settings
):
    settings.BABEL_LIVE_MAX_SECONDS = 600  # outlives the round however busy the machine
    campaign.participants.update(model=MODEL)
    experiment_update(
        experiment=campaign, config={"summarizer_model": "offline", "definer_model": "offline"}
    )
    gemini_standin.chunk_delay = 0.25  # a slowly streaming model: a word every 250 ms
    gemini_standin.script(
        [Reply(DM_NARRATION), Reply(THORIN_ACTS), Reply(CASSIA_ACTS), Reply(DM_ANSWERS)]
    )
    client = Client()
    client.force_login(player)  # Thorin's player
    host, port = live_server.thread.host, live_server.thread.port
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    page = Page(host, port, f"/campaigns/{campaign.pk}/live/", cookie)
    page.start()
    assert page.opened.wait(10) and page.status == 200

    env = gemini_env(gemini_standin, timeout=30)
    with celery_worker(real_services, extra_env=env) as queue, default_queue(queue):
        job = round_start(experiment=campaign, user=owner)
        assert job.status == "pending", "not eager: the worker plays it"
        wait_for(lambda: Job.objects.get(pk=job.pk).status in ("succeeded", "failed"), timeout=180)
    wait_for(lambda: page.count("stored") >= 6, timeout=10)
    page.hang_up()

    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    drafts = drafts_by_id([f for _at, f in page.timed])
    thorin_draft = next(d for d in drafts.values() if d["text"] == THORIN_PUBLIC)
    assert len(thorin_draft["seqs"]) >= 2, "it grew in pieces"
    draft_id = thorin_draft["draft_id"]
    first_piece = min(
        at for at, f in page.timed if f.event == "draft" and f.data["draft_id"] == draft_id
    )
    stored = min(
        at for at, f in page.timed if f.event == "stored" and f.data["draft_id"] == draft_id
    )
    # the first words were on the page while the model was still writing the rest
    assert stored - first_piece > 0.2
    # what this page may not read never came: Cassia's monologue, the DM's GM note
    assert b"Let him go first" not in page.raw and b"mimic" not in page.raw
    whisper = Turn.objects.get(experiment=campaign, speaker="Thorin", kind="whisper")
    assert whisper.content in [d["text"] for d in drafts.values()]
