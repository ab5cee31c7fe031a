"""The Arena page in a real browser: start a run with the button, see the report."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

from campaigns.services import transcripts
from context_engine.arena.generate import generate_campaign
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_the_owner_runs_the_arena_from_the_page(page, live_server, tmp_path):
    owner = make_user("arena_owner")
    data = generate_campaign(rounds=30, players=3, seed=9)
    experiment = transcripts.import_transcript(data=copy.deepcopy(data), owner=owner)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "arena_owner")
    page.fill("input[name=password]", "pw-arena_owner")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/campaigns/{experiment.pk}/arena/")
    assert "No Arena run yet." in page.content()
    # Without a broker the run happens inside this request: on a busy machine the click's
    # navigation takes longer than the default 15 s.
    page.set_default_navigation_timeout(120_000)
    page.click("text=Run the Arena", timeout=120_000)
    page.wait_for_selector("#arena-results", timeout=120_000)
    table = page.locator("#arena-results").inner_text()
    assert "layered" in table and "tiered" in table
    assert page.locator("h2", has_text="Recommended:").count() == 1
    # Polled from Python: wait_for_function evaluates a string, which the CSP forbids.
    for _ in range(100):
        if page.locator("img").first.evaluate("img => img.naturalWidth") > 0:
            break
        page.wait_for_timeout(100)
    assert page.locator("img").first.evaluate("img => img.naturalWidth") > 0
    shots = Path(os.environ.get("BABEL_SCREENSHOT_DIR") or tmp_path)
    page.screenshot(path=str(shots / "arena-page.png"), full_page=True)
    # A phone: the results table scrolls inside itself (and says so); the page does not.
    page.set_viewport_size({"width": 390, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.locator(".scroll-hint").first.wait_for()
