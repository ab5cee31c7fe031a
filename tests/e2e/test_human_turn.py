"""A human at the table, in a real browser (issue 11): the DM starts a round, the round
waits for Thorin's human, who sees the prompt above the composer, posts, and the round
completes. Screenshots of both sides go under ``artifacts/console/`` (git-ignored)."""

from __future__ import annotations

import pytest

from campaigns.models import Job, RoundStep, Turn
from tests.e2e.test_console import demo, shot, sign_in  # noqa: F401 (demo is a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_human_players_round_is_driven_through_the_console(browser, live_server, demo):  # noqa: F811
    demo.participants.filter(role="Thorin").update(model="human")
    base = f"{live_server.url}/campaigns/{demo.pk}/"

    # Thorin's page is open before the round starts: it learns of the turn without a reload.
    thorin = browser.new_context().new_page()
    sign_in(thorin, live_server, "thorin")
    thorin.goto(base)
    assert thorin.locator("#your-turn").count() == 0
    round_before = thorin.locator("#current-round").inner_text()

    dm = browser.new_context().new_page()
    sign_in(dm, live_server, "demo")
    dm.goto(base)
    dm.click("button.cmd-round")
    dm.locator("#job-progress .job-message", has_text="waiting for Thorin").wait_for()
    job = Job.objects.get(experiment=demo, kind="round")
    assert job.status == "waiting"
    assert dm.locator("#job-progress .job-status").inner_text() == "Waiting for a human"
    shot(dm, "round-waiting-dm")

    prompt = thorin.locator("#your-turn")
    # The live server is WSGI (no stream; test_live_round has the ASGI page, told at once):
    # the idle poller asks every 15 s.
    prompt.wait_for(timeout=30_000)
    assert "Your turn, Thorin." in thorin.locator("#round-status").inner_text()
    assert "The round is waiting for you, Thorin." in prompt.inner_text()
    shot(thorin, "round-waiting-player")
    # The clock moved with the round: the player's header says so without a reload.
    demo.refresh_from_db()
    assert thorin.locator("#current-round").inner_text() == str(demo.current_round)
    assert round_before != str(demo.current_round)
    # The prompt sits above the composer's form.
    assert prompt.bounding_box()["y"] < thorin.locator("#composer form").bounding_box()["y"]

    thorin.select_option("#composer select[name=kind]", "action")
    thorin.fill("#composer textarea[name=content]", "Thorin wades into the tide, lantern high.")
    # The post is the step, and the round goes on inside it (Celery runs eagerly here):
    # its answer comes when the round is done. (The prompt may go before that: the live
    # stream refreshes the round bar, and with it the composer, as soon as the step is in.)
    with thorin.expect_response(lambda r: r.request.method == "POST" and "/turns/" in r.url):
        thorin.click("#composer button[type=submit]")
    thorin.locator("#your-turn").wait_for(state="detached")

    job.refresh_from_db()
    assert job.status == "succeeded", job.message
    step = RoundStep.objects.get(experiment=demo, round=job.result["round"], speaker="Thorin")
    turn = Turn.objects.get(pk=step.turns[0])
    assert turn.content == "Thorin wades into the tide, lantern high."
    later = Turn.objects.filter(experiment=demo, round=job.result["round"], seq__gt=turn.seq)
    assert {"Cassia", "Wren"} <= set(later.values_list("speaker", flat=True))

    dm.goto(base)
    assert "succeeded" in dm.locator("#job-progress .job-status").inner_text().lower()


def test_the_dm_skips_an_away_human_and_the_round_says_so(browser, live_server, demo):  # noqa: F811
    demo.participants.filter(role="Thorin").update(model="human")
    dm = browser.new_context().new_page()
    sign_in(dm, live_server, "demo")
    dm.goto(f"{live_server.url}/campaigns/{demo.pk}/")
    dm.click("button.cmd-round")
    dm.locator("#job-progress .job-message", has_text="waiting for Thorin").wait_for()

    dm.click("#job-progress form.skip-human button")
    dm.locator("#job-progress .job-message", has_text="skipped by the DM: Thorin").wait_for(
        timeout=30_000
    )
    message = dm.locator("#job-progress .job-message").inner_text()
    assert "did not act in time" not in message
    demo.refresh_from_db()
    # The header's round number followed the round without a reload.
    assert dm.locator("#current-round").inner_text() == str(demo.current_round)
    shot(dm, "round-skipped-dm")
    job = Job.objects.get(experiment=demo, kind="round")
    assert job.status == "succeeded", job.message
