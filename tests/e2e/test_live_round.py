"""Watching a round live in a real browser (issue 25): a DM page and two player pages are
open while a round runs on a slowly streaming OpenAI-compatible stand-in (the real openai
SDK, two words a chunk). The site runs under ASGI (uvicorn) on PostgreSQL.

The DM sees every answer grow; each player sees the public answers and their own whispers
grow, and never the other player's whisper or the GM note — not in a draft, not anywhere
on the page. One player's stream is closed and reopened mid-answer, the other player's page
is reloaded mid-answer: both end with drafts equal to the stored turns, nothing lost and
nothing twice. While a page's stream is open, the round bar does not poll at all (every
round-bar request is one the stream asked for); a human player's page says "Your turn" as
soon as the round waits for them, and a DM's post reaches it the same way.

Screenshots of the pages mid-stream (1280 and 390 px) go to ``artifacts/console/``.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path

import pytest
from django.db import connection
from playwright.sync_api import expect

from campaigns.models import Job, Turn
from campaigns.services.notes import note_create
from campaigns.services.relay import human_turn_create, round_create, round_run
from tests.factories import make_experiment, make_user
from tests.standins.server import Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = Path(
    os.environ.get("BABEL_SCREENSHOT_DIR")
    or Path(__file__).resolve().parents[2] / "artifacts" / "console"
)

NARRATION = (
    "PUBLIC: The tide drops below the harbour wall and the sunken door groans open "
    "while gulls wheel over the quiet pier.\n"
    "GM NOTE: Zorbelhaven mimic wakes at the third bell."
)
THORIN = (
    "PUBLIC: Thorin wades toward the door with his lantern held high above the water.\n"
    "WHISPER to DM: Quentaril draught under the door, can I feel it on my face when I kneel "
    "beside the hinges and hold the lantern low against the swollen wood?"
)
CASSIA = (
    "PUBLIC: Cassia stays on the pier and counts the bells under her breath.\n"
    "WHISPER to DM: Vexholme roofs, is anyone watching from them while I pretend to count "
    "the bells and keep my hood pulled low against the salt wind?"
)
ANSWERS = (
    "WHISPER to Thorin: Yes, a cold Quentaril draught rises from somewhere below, and it "
    "smells of wet stone, old candle wax and something that has not seen daylight.\n"
    "WHISPER to Cassia: Two Geometers crouch on the Vexholme roofs, their brass lenses "
    "turning slowly toward the pier every time the bell tower rings."
)
# (Whispers are long enough to be seen growing: the output guard holds back a guarded
# part's last seven words until it has seen what follows them.)
SECRETS = {
    # words only some pages may ever show
    "gm_note": "Zorbelhaven",
    "thorin_whisper": "Quentaril",
    "cassia_whisper": "Vexholme",
}

DRAFTS_JS = """() => Array.from(document.querySelectorAll('#live-drafts li.draft')).map(li => ({
  id: li.dataset.draft, speaker: li.dataset.speaker, kind: li.dataset.kind,
  text: li.querySelector('.draft-text').textContent,
  ended: li.classList.contains('draft-ended') || li.classList.contains('draft-stored'),
}))"""


@pytest.fixture
def contexts(browser, asgi_server):
    """Browser contexts, closed before the server stops (their streams end with them)."""
    opened: list = []
    yield opened
    for context in opened:
        context.close()


def _sign_in(browser, server, username):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")
    return context, page


def _watch(page, url):
    """Open the campaign page and wait until its stream is open."""
    page.goto(url)
    page.locator("#live-state", has_text="live").wait_for()


class Observer:
    """Every draft each page shows, as seen over time: draft id → list of (text, ended)."""

    def __init__(self, pages: dict):
        self.pages = pages
        self.seen: dict[str, dict[str, dict]] = {name: {} for name in pages}
        self.page_text: dict[str, list[str]] = {name: [] for name in pages}

    def look(self, name):
        for draft in self.pages[name].evaluate(DRAFTS_JS):
            entry = self.seen[name].setdefault(
                draft["id"], {"speaker": draft["speaker"], "kind": draft["kind"], "texts": []}
            )
            if not entry["texts"] or entry["texts"][-1] != (draft["text"], draft["ended"]):
                entry["texts"].append((draft["text"], draft["ended"]))
        self.page_text[name].append(self.pages[name].locator("main").inner_text())

    def growing(self, name, speaker) -> list[dict]:
        """This page's drafts by ``speaker`` seen with at least two different texts."""
        return [
            d
            for d in self.seen[name].values()
            if d["speaker"] == speaker and len({t for t, _ in d["texts"] if t}) >= 2
        ]


def _shot(page, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for width, suffix in ((1280, ""), (390, "-390")):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"{name}{suffix}.png"), full_page=True)
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"{name} is {wide} px wide at {width} px"
    page.set_viewport_size({"width": 1280, "height": 900})


def test_a_round_streams_to_each_page_only_what_it_may_read(
    browser, asgi_server, contexts, openai_standin, settings
):
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
    owner = make_user("live_owner")
    thorin = make_user("live_thorin")
    cassia = make_user("live_cassia")
    experiment = make_experiment(
        owner=owner,
        name="The sunken door",
        roles=("DM", "Thorin", "Cassia"),
        config={"summarizer_model": "offline", "definer_model": "offline"},
    )
    experiment.participants.update(model="openai:local")
    experiment.participants.filter(role="Thorin").update(user=thorin)
    experiment.participants.filter(role="Cassia").update(user=cassia)
    openai_standin.chunk_words = 2
    # Slow enough that a busy 2-core machine still sees each answer grow between looks.
    openai_standin.chunk_delay = 0.3
    openai_standin.script([Reply(NARRATION), Reply(THORIN), Reply(CASSIA), Reply(ANSWERS)])

    url = f"{asgi_server.url}/campaigns/{experiment.pk}/"
    pages = {}
    for name, user in (("dm", owner), ("thorin", thorin), ("cassia", cassia)):
        context, page = _sign_in(browser, asgi_server, user.username)
        contexts.append(context)
        pages[name] = page
    bar_requests = {name: [] for name in pages}
    for name, page in pages.items():
        page.on(
            "request",
            lambda request, name=name: (
                "part=round_status" in request.url
                and bar_requests[name].append(request.headers.get("x-babel-live"))
            ),
        )
        _watch(page, url)

    job = round_create(experiment=experiment, user=owner)
    failure: list[BaseException] = []

    def play():
        try:
            round_run(job_id=job.pk)
        except BaseException as exc:  # reported by the test thread
            failure.append(exc)
        finally:
            connection.close()

    observer = Observer(pages)
    runner = threading.Thread(target=play, name="round", daemon=True)
    runner.start()
    reconnected = reloaded = shot = False
    deadline = time.monotonic() + 180
    while runner.is_alive() and time.monotonic() < deadline:
        for name in pages:
            observer.look(name)
        # Mid-answer (Thorin's own action is being written): Thorin's stream drops and
        # comes back; Cassia's page is reloaded.
        if not reconnected and observer.growing("thorin", "Thorin"):
            pages["thorin"].evaluate("window.babelLive.reconnect()")
            reconnected = True
        if not reloaded and observer.growing("cassia", "Thorin"):
            pages["cassia"].reload()
            pages["cassia"].locator("#live-state", has_text="live").wait_for()
            reloaded = True
        if not shot and observer.growing("dm", "Cassia"):
            _shot(pages["dm"], "live-dm")
            _shot(pages["thorin"], "live-thorin")
            shot = True
        time.sleep(0.05)
    runner.join(timeout=5)
    assert not runner.is_alive(), "the round did not finish in 180 s"
    assert not failure, failure
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    assert reconnected and reloaded and shot

    turns = list(Turn.objects.filter(experiment=experiment).order_by("seq"))
    by_text = {turn.content.strip(): turn for turn in turns}
    last_public = [turn for turn in turns if turn.visibility is None][-1]
    for page in pages.values():  # the stored turns replace the drafts
        page.locator("#timeline li.turn", has_text=last_public.content[:40]).wait_for()
        expect(page.locator("#live-drafts li.draft")).to_have_count(0, timeout=20_000)
        for name in pages:
            observer.look(name)

    # The DM sees every answer grow, from every speaker.
    for speaker in ("DM", "Thorin", "Cassia"):
        assert observer.growing("dm", speaker), f"the DM never saw {speaker} write"
    dm_kinds = {(d["speaker"], d["kind"]) for d in observer.seen["dm"].values()}
    assert ("DM", "gm_note") in dm_kinds and ("Cassia", "whisper") in dm_kinds

    # Each player: public answers and their own whispers grow; never the other's.
    for name, own, other in (("thorin", "Thorin", "Cassia"), ("cassia", "Cassia", "Thorin")):
        seen = observer.seen[name].values()
        kinds = {(d["speaker"], d["kind"]) for d in seen}
        assert ("DM", "narrative") in kinds and (own, "whisper") in kinds
        assert (other, "whisper") not in kinds and ("DM", "gm_note") not in kinds
        assert ("DM", "whisper") in kinds  # the DM's answer to them
        assert any(d["kind"] == "narrative" for d in observer.growing(name, "DM"))
        assert any(d["kind"] == "whisper" for d in observer.growing(name, own)), observer.seen[name]
        hidden = [SECRETS["gm_note"], SECRETS[f"{other.lower()}_whisper"]]
        for text in observer.page_text[name]:
            assert not any(word in text for word in hidden), text
        for draft in seen:
            assert not any(word in t for t, _ in draft["texts"] for word in hidden)
        html = pages[name].content()
        assert not any(word in html for word in hidden)
        assert SECRETS[f"{own.lower()}_whisper"] in html  # their own whisper, stored

    # Nothing lost, nothing twice: on every page (the reconnected and reloaded ones too),
    # each draft only ever grew, and a draft seen to its end equals its stored turn.
    for name in pages:
        finished = 0
        for draft in observer.seen[name].values():
            texts = [t for t, _ in draft["texts"]]
            for before, after in itertools.pairwise(texts):
                assert after.startswith(before), (name, before, after)
            ended = [t for t, done in draft["texts"] if done]
            if ended:
                assert ended[-1].strip() in by_text, (name, ended[-1], list(by_text))
                finished += 1
        assert finished >= 3, (name, observer.seen[name])

    # While the stream was open, the 4-second poll stayed quiet: every round-bar request
    # was one the stream asked for.
    for name, headers in bar_requests.items():
        assert headers, name
        assert set(headers) == {"refresh"}, (name, headers)


def test_the_round_bar_polls_while_the_stream_is_down_and_not_while_it_is_up(
    browser, asgi_server, contexts, settings
):
    owner = make_user("live_poll_owner")
    player = make_user("live_poll_thorin")
    experiment = make_experiment(owner=owner, roles=("DM", "Thorin", "Cassia"))
    experiment.participants.update(model="offline")
    experiment.participants.filter(role="Thorin").update(user=player)
    round_create(experiment=experiment, user=owner)  # an active round: the bar polls every 4 s
    context, page = _sign_in(browser, asgi_server, player.username)
    contexts.append(context)
    polls: list[tuple[float, str | None]] = []
    page.on(
        "request",
        lambda request: (
            "part=round_status" in request.url
            and polls.append((time.monotonic(), request.headers.get("x-babel-live")))
        ),
    )
    _watch(page, f"{asgi_server.url}/campaigns/{experiment.pk}/")

    # The stream goes down (the endpoint is unreachable): the 4-second poll takes over.
    page.route("**/live/**", lambda route: route.abort())
    page.evaluate("window.babelLive.reconnect()")
    page.locator("#live-state", has_text="reconnecting").wait_for()
    down = time.monotonic()
    expect(page.locator("#live-state")).to_have_text("reconnecting…")
    page.wait_for_timeout(9_000)
    assert [at for at, header in polls if at > down and header is None], polls

    # Back up: the poll stops altogether — not even the idle pace (15 s): the stream
    # carries everything the bar shows (steps, turns, a round waiting for a human).
    page.unroute("**/live/**")
    page.locator("#live-state", has_text="live").wait_for(timeout=40_000)
    up = time.monotonic()
    page.wait_for_timeout(17_000)
    assert not [at for at, header in polls if at > up and header is None], polls


def test_a_players_page_shows_your_turn_as_soon_as_the_round_waits_for_them(
    browser, asgi_server, contexts
):
    """A human's seat: the round bar and the composer say "Your turn" within a couple of
    seconds of the round starting to wait (the ``waiting`` event; no poll runs while the
    stream is open). A DM's public narration reaches the player's timeline the same way
    (``turn``); a GM note sends the player's page nothing at all."""
    owner = make_user("live_wait_owner")
    player = make_user("live_wait_thorin")
    experiment = make_experiment(owner=owner, roles=("DM", "Thorin", "Cassia"))
    experiment.participants.update(model="offline")
    experiment.participants.filter(role="Thorin").update(user=player, model="human")
    context, page = _sign_in(browser, asgi_server, player.username)
    contexts.append(context)
    polls: list[str | None] = []
    page.on(
        "request",
        lambda request: (
            "part=round_status" in request.url and polls.append(request.headers.get("x-babel-live"))
        ),
    )
    _watch(page, f"{asgi_server.url}/campaigns/{experiment.pk}/")
    assert page.locator("#your-turn").count() == 0

    job = round_create(experiment=experiment, user=owner)
    round_run(job_id=job.pk)  # the DM narrates (offline), then the round waits for Thorin
    job.refresh_from_db()
    assert job.status == Job.Status.WAITING, job.message
    waited = time.monotonic()
    page.locator("#your-turn").wait_for(timeout=3_000)  # the idle poll would take 15 s
    assert time.monotonic() - waited < 3
    assert "Your turn, Thorin." in page.locator("#round-status").inner_text()
    # Told by the stream's ``waiting`` event (sent once the Job's status has committed).
    assert page.evaluate("window.babelLive.waiting") == {
        "round": job.result["round"],
        "role": "Thorin",
    }
    narration = Turn.objects.filter(experiment=experiment, speaker="DM").first()
    page.locator("#timeline li.turn", has_text=narration.content[:30]).wait_for(timeout=3_000)

    # The DM posts: a public narration reaches the page at once; a GM note, nothing.
    events = page.evaluate("window.babelLive.events")
    note = note_create(
        experiment=experiment, user=owner, speaker="DM", content="Zorbelhaven stirs below."
    )
    page.wait_for_timeout(1_500)
    assert page.evaluate("window.babelLive.events") == events, "a GM note reached a player"
    human_turn_create(
        experiment=experiment,
        user=owner,
        speaker="DM",
        kind="narrative",
        content="A bell rings twice from the drowned chapel.",
    )
    page.locator("#timeline li.turn", has_text="drowned chapel").wait_for(timeout=3_000)
    assert note.content not in page.content()
    # Every round-bar request was one the stream asked for: no poll while it was open.
    assert polls and set(polls) == {"refresh"}, polls
