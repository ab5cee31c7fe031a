"""A new DM sets up a campaign from the browser alone and plays it (issue 24).

Through the forms only: a new campaign, a DM and three model players (offline) on the
cast page, then "Play N rounds" for 3 rounds, the header, the composer's round and the
timeline following the clock without a reload. Screenshots of every new page at 1,280
and 390 px go under ``artifacts/console/``; none of them scrolls sideways.
"""

from __future__ import annotations

import pytest

from campaigns.models import Experiment, Job, Turn
from tests.e2e.test_console import shot
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

PASSWORD = "pw-saltdm"  # what `make_user` gives "saltdm"
PLAYERS = ("Ash", "Bryn", "Cole")


def no_sideways_scroll(page) -> None:
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (page.url, width)
    page.set_viewport_size({"width": 1280, "height": 900})


def add_seat(page, role: str, kind: str) -> None:
    form = page.locator("#add-seat")
    form.locator("input[name='new-role']").fill(role)
    form.locator("select[name='new-kind']").select_option(kind)
    form.locator("input[name='new-model']").fill("offline")
    form.locator("textarea[name='new-bio']").fill(f"{role}, who walks the salt road.")
    if role == "Bryn":
        form.locator("textarea[name='new-secret']").fill("Bryn means to sell the map.")
        form.locator("input[name='new-reveal_round']").fill("2")
        form.locator("input[name='new-temperature']").fill("0.4")
    form.locator("button", has_text="Add to the cast").click()
    page.locator(".seat .role", has_text=role).wait_for()


def test_a_new_dm_sets_up_a_campaign_and_plays_three_rounds(page, live_server):
    make_user("saltdm")
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "saltdm")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")

    # The new campaign form.
    page.click("header.top a:has-text('New campaign')")
    page.locator("h1", has_text="New campaign").wait_for()
    no_sideways_scroll(page)
    shot(page, "campaign-new")
    page.fill("input[name=name]", "The Salt Road")
    page.fill("textarea[name=hook]", "A caravan crosses the salt flats at night.")
    page.fill("textarea[name=rules]", "Roll under your skill. Whispers reach only the DM.")
    page.fill("input[name=hot_window_rounds]", "0")  # a slip first: the field says why
    page.click("button:has-text('Create and set up the cast')")
    page.locator("[data-field=hot_window_rounds] .error", has_text="from 1 to 50").wait_for()
    assert not Experiment.objects.exists()
    page.fill("input[name=hot_window_rounds]", "3")
    page.click("button:has-text('Create and set up the cast')")
    page.locator("h2", has_text="Cast").wait_for()
    experiment = Experiment.objects.get()
    assert (experiment.name, experiment.config["hot_window_rounds"]) == ("The Salt Road", 3)

    # The cast: a DM and three model players, one of them with a secret goal.
    add_seat(page, "DM", "dm")
    for role in PLAYERS:
        add_seat(page, role, "player")
    page.locator("#add-seat input[name='new-temperature']").fill("7")  # refused, named
    page.locator("#add-seat input[name='new-role']").fill("Dara")
    page.locator("#add-seat button", has_text="Add to the cast").click()
    page.locator("#add-seat [data-field=temperature] .error", has_text="from 0 to 2").wait_for()
    assert list(experiment.participants.order_by("order").values_list("role", "model")) == [
        ("DM", "offline"),
        *((role, "offline") for role in PLAYERS),
    ]
    page.locator(".seat", has_text="Bryn").locator("summary").click()
    no_sideways_scroll(page)
    shot(page, "cast")

    page.click("nav.tabs a:has-text('Settings')")
    page.locator("#settings-form").wait_for()
    no_sideways_scroll(page)
    shot(page, "settings")

    # Play 3 rounds from the campaign page, without reloading it.
    page.click("nav.tabs a:has-text('Timeline')")
    page.fill("#id_rounds", "3")
    page.click("button.cmd-play")
    page.locator("#job-progress .job-message", has_text="Played 3 rounds").wait_for(timeout=120_000)
    play = Job.objects.get(experiment=experiment, kind="play")
    assert (play.status, play.result["played"]) == ("succeeded", 3)
    page.locator("#current-round", has_text="3").wait_for()
    page.locator("#composer-round", has_text="3").wait_for()
    page.locator("#timeline .turn .round", has_text="R3").first.wait_for()
    assert not page.locator("#run-panel button.cmd-play[disabled]").count()
    no_sideways_scroll(page)
    shot(page, "campaign-played")
    rounds = set(Turn.objects.filter(experiment=experiment).values_list("round", flat=True))
    assert rounds == {1, 2, 3}
    for role in PLAYERS:
        assert Turn.objects.filter(experiment=experiment, speaker=role).exists()

    # The DM's next post goes into the open round, not a closed one.
    page.fill("#composer textarea[name=content]", "The caravan halts at the third cairn.")
    page.click("#composer button:has-text('Post')")
    page.locator("#timeline", has_text="third cairn").wait_for()
    assert Turn.objects.get(content__startswith="The caravan halts").round == 3

    # The dashboard lists it with its round.
    page.click("header.top a:has-text('Campaigns')")
    row = page.locator("table.dashboard tr", has_text="The Salt Road")
    assert row.locator("td[data-label=Round]").inner_text() == "3"
    # Only the two slips above (a form re-rendered with its error is a 422); no 404s
    # (the favicon), no script errors.
    assert [e for e in errors if "422" not in e] == [], errors
