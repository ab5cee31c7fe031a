"""The DM console in a real browser: a DM runs the demo campaign from the browser alone.

Every run saves a screenshot of each page under ``artifacts/console/`` (git-ignored);
two of them are committed under ``docs/`` for the README.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.management import call_command

from campaigns.management.commands.seed_demo import DEMO_PASSWORD
from campaigns.models import Experiment, Job, LoreEntry, Summary, Turn, TurnRevision

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "console"


def shot(page, name: str) -> None:
    """The page at 1280 px and at 390 px (a phone), full length; at neither width does
    the page scroll sideways (a wide table scrolls inside itself and says so)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for width, suffix in ((1280, ""), (390, "-390")):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(ARTIFACTS / f"{name}{suffix}.png"), full_page=True)
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"{name} is {wide} px wide at {width} px"
    page.set_viewport_size({"width": 1280, "height": 900})


def sign_in(page, live_server, username):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", DEMO_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


@pytest.fixture
def demo(db):
    call_command("seed_demo")
    return Experiment.objects.get()


def test_a_dm_runs_the_demo_from_the_browser(page, live_server, demo):
    base = f"{live_server.url}/campaigns/{demo.pk}"
    sign_in(page, live_server, "demo")
    assert page.locator("h1").inner_text() == "Campaigns"
    assert page.locator("table.dashboard meter").count() >= 4
    shot(page, "dashboard")

    # The World Bible: correct a definition, then lock it.
    page.goto(f"{base}/lore/?tab=proposed")
    entry = (
        LoreEntry.objects.filter(experiment=demo, status="proposed", locked=False)
        .order_by("-mention_count", "term")
        .first()
    )
    row = page.locator(f"#lore-{entry.pk}")
    row.locator("details.edit summary").click()
    row.locator("textarea[name=definition]").fill("Corrected in the browser.")
    row.locator("button[value=correct]").click()
    page.locator(f"#lore-{entry.pk} .definition", has_text="Corrected in the browser.").wait_for()
    page.locator(f"#lore-{entry.pk} button[value=lock]").click()
    page.locator(f"#lore-{entry.pk} .badge.lock").wait_for()
    entry.refresh_from_db()
    assert (entry.definition, entry.locked) == ("Corrected in the browser.", True)
    page.locator(f"#lore-{entry.pk} a.history-link").click()
    page.locator(f"#history-{entry.pk} ins", has_text="Corrected").wait_for()
    shot(page, "lore")

    # GM notes: write, edit, then (after checking a player's view) delete.
    page.goto(f"{base}/notes/")
    page.fill("#id_content", "ZQX the bell-ringer is the smuggler.")
    page.click("button:has-text('Add note')")
    note_row = page.locator("li.note", has_text="ZQX the bell-ringer")
    note_row.wait_for()
    note = Turn.objects.get(content="ZQX the bell-ringer is the smuggler.")
    note_row.locator("a", has_text="Edit").click()
    page.locator(f"#note-{note.pk} textarea").fill("ZQX the bell-ringer WAS the smuggler.")
    page.locator(f"#note-{note.pk} button", has_text="Save").click()
    page.locator(f"#note-{note.pk} .turn-body", has_text="WAS the smuggler").wait_for()
    assert TurnRevision.objects.filter(turn=note, action="edit").count() == 1
    shot(page, "notes")

    page.goto(f"{base}/?as=Thorin")
    assert "viewing as Thorin" in page.content()
    assert "bell-ringer" not in page.content()
    page.goto(f"{base}/notes/?as=Thorin")
    assert "bell-ringer" not in page.content()

    # /checkpoint from the campaign page: the progress bar reaches done.
    page.goto(f"{base}/")
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    with page.expect_response(lambda response: "/commands/" in response.url):
        page.locator("button.cmd-checkpoint").click()
    assert asked and asked[0].startswith("Run /checkpoint?")  # it asks first
    job = Job.objects.filter(experiment=demo, kind="checkpoint").latest("created_at")
    # The new job's bar (polling until it ends, when a worker runs it) reaches done.
    page.locator(f"#job-bar-{job.pk}").wait_for()
    page.locator("#job-progress .job-status", has_text="Succeeded").wait_for()
    assert page.locator("#job-progress progress").get_attribute("value") == "100"
    shot(page, "campaign")
    dm_digests = Summary.objects.filter(experiment=demo, kind="digest", audience=["DM"])
    folded = dm_digests.latest("version")
    assert note.pk in folded.source_turn_ids  # the checkpoint folded the note

    # Deleting the note rewinds the DM digest and folds it again without the note.
    page.goto(f"{base}/notes/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(f"#note-{note.pk} button", has_text="Delete").click()
    page.locator("p.notice", has_text="deleted").wait_for()
    assert not Turn.objects.filter(pk=note.pk).exists()
    rebuilt = dm_digests.latest("version")
    assert rebuilt.version > folded.version
    assert note.pk not in rebuilt.source_turn_ids and "bell-ringer" not in rebuilt.text

    # The inspector: one role, then compared with another.
    page.goto(f"{base}/context/Thorin/")
    assert page.locator(".budget-bar .seg").count() >= 3
    page.fill("input[name=input]", "Where is the ledger?")
    page.select_option("select[name=compare]", "Cassia")
    page.click("button:has-text('Rebuild')")
    page.locator("#inspector h3", has_text="Thorin vs Cassia").wait_for()
    page.locator(".pack").first.locator("details.items summary", has_text="recent:").click()
    shot(page, "inspector")

    page.goto(f"{base}/memory/")
    page.locator("h2", has_text="Memory digests").wait_for()
    dm_line = page.locator(".digest-line", has_text="Digest for DM")
    dm_line.locator("button", has_text="Show diff").click()
    page.locator("#digest-diff pre.diff").wait_for()
    shot(page, "memory")
    page.goto(f"{base}/whispers/")
    shot(page, "whispers")


def test_a_player_whispers_and_the_dm_reads_it(browser, live_server, demo):
    player = browser.new_context().new_page()
    sign_in(player, live_server, "thorin")
    player.goto(f"{live_server.url}/campaigns/{demo.pk}/whispers/")
    player.click("text=Start a whisper")
    player.check("input[name=recipients][value=DM]")
    player.fill("textarea[name=content]", "Thorin to the DM: the well hums at night.")
    player.click("button:has-text('Whisper')")
    player.locator(".thread", has_text="the well hums at night").wait_for()
    assert not re.search(r"Cassia.{0,40}whisper", player.locator("#threads").inner_text())

    dm = browser.new_context().new_page()
    sign_in(dm, live_server, "demo")
    dm.goto(f"{live_server.url}/campaigns/{demo.pk}/whispers/")
    thread = dm.locator(".thread", has_text="the well hums at night")
    assert thread.count() == 1
    assert "Thorin" in thread.locator("h3").inner_text()


def test_a_player_sees_that_whispers_happened_when_the_campaign_shows_their_existence(
    browser, live_server, demo
):
    demo.config = {**demo.config, "show_whisper_existence": True}
    demo.save(update_fields=["config"])
    whispers = Turn.objects.filter(experiment=demo, kind="whisper")
    hidden = [turn for turn in whispers if "Thorin" not in (turn.visibility or ())]
    assert hidden
    player = browser.new_context().new_page()
    sign_in(player, live_server, "thorin")
    player.goto(f"{live_server.url}/campaigns/{demo.pk}/?kind=whisper")
    stubs = player.locator(".whisper-stub")
    stubs.first.wait_for()
    shot(player, "timeline-whisper-stubs")
    text = player.locator("#timeline").inner_text()
    assert "You cannot read what was said." in text
    for turn in hidden:
        assert turn.content[:40] not in text
