"""Memory lookups and reveals in a real browser (issue 10): the owner, viewing as Thorin,
asks `/timeline`; a bad range names the text field; the inspector shows why the pins are
in Thorin's pack; a GM note is revealed to Thorin from the timeline.

Screenshots go to ``artifacts/console/`` (git-ignored) like the other console pages.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from campaigns.models import Experiment, RetrievalPin, Turn, VisibilityChange
from tests.e2e.test_console import ARTIFACTS, shot, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def demo(db):
    call_command("seed_demo")
    return Experiment.objects.get()


def test_the_owner_looks_up_memory_for_thorin_and_reveals_a_note(page, live_server, demo):
    base = f"{live_server.url}/campaigns/{demo.pk}"
    sign_in(page, live_server, "demo")

    page.goto(f"{base}/?as=Thorin")
    composer = page.locator("#composer")
    composer.locator("input[name=content]").fill("/timeline 1..2")
    composer.locator("button", has_text="Look up").click()
    page.locator("#composer .lookup li.snippet").first.wait_for()
    assert "Pinned for Thorin's next pack" in page.locator("#composer").inner_text()
    pin = RetrievalPin.objects.get(experiment=demo)
    assert (pin.role, pin.command) == ("Thorin", "timeline")
    shot(page, "lookup")

    page.locator("#composer input[name=content]").fill("/timeline 5..2")
    page.locator("#composer button", has_text="Look up").click()
    page.locator("#composer .has-error .error").wait_for()
    assert "ends (2) before it starts (5)" in page.locator("#composer").inner_text()
    shot(page, "lookup-error")

    page.goto(f"{base}/context/Thorin/")
    page.locator("details.items summary", has_text="retrieval:").click()
    page.get_by_text("pinned by /timeline").first.wait_for()
    page.locator("details.items", has_text="pinned by").screenshot(
        path=str(ARTIFACTS / "inspector-pins-section.png")
    )
    shot(page, "inspector-pins")

    note = (
        Turn.objects.filter(experiment=demo, kind="gm_note", visibility=["DM"])
        .order_by("-seq")
        .first()
    )
    page.goto(f"{base}/")
    row = page.locator(f"#turn-{note.seq}")
    row.locator("details.reveal summary").click()
    row.locator("input[name=add][value=Thorin]").check()
    shot(page, "reveal")
    row.screenshot(path=str(ARTIFACTS / "reveal-row.png"))
    row.locator("button", has_text="Reveal").click()
    page.locator(f"#turn-{note.seq} .chip", has_text="Thorin").wait_for()
    change = VisibilityChange.objects.get(turn=note)
    assert change.new_visibility == ["DM", "Thorin"]
