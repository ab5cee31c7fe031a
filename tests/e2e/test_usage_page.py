"""The Usage page in a real browser, after three rounds on an OpenAI-compatible stand-in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from campaigns.services.relay import round_create, round_run
from tests.factories import make_experiment, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "console"


def test_the_owner_reads_usage_per_round_and_agent(page, live_server, settings, openai_standin):
    settings.OPENAI_BASE_URL = openai_standin.base_url
    settings.BABEL_LLM_RETRY_BASE_DELAY = 0.01
    owner = make_user("usage_owner")
    experiment = make_experiment(
        owner=owner,
        name="The drowned archive",
        roles=("DM", "Thorin", "Cassia", "Wren"),
        config={"summarizer_model": "offline", "definer_model": "offline"},
    )
    experiment.participants.update(model="openai:local")
    experiment.participants.filter(role="Wren").update(model="offline")
    for _ in range(3):
        round_run(job_id=round_create(experiment=experiment, user=owner).pk)

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "usage_owner")
    page.fill("input[name=password]", "pw-usage_owner")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/campaigns/{experiment.pk}/")
    page.click("nav.tabs >> text=Usage")
    page.wait_for_selector("#usage-agents")
    assert "Round 3 by agent" in page.locator("#usage-agents h3").inner_text()
    rows = page.locator("#usage-agents tbody tr").all_inner_texts()
    assert [row.split("\t")[0] for row in rows][:2] == ["DM", "Thorin"]
    page.select_option("#usage-round", "1")  # htmx swaps the agent table only
    # Settled: htmx wires up the swapped-in form (its change trigger) only when it drops
    # `htmx-added`; a change before that would send nothing.
    page.wait_for_selector("#usage-agents:not(.htmx-added) h3:has-text('Round 1 by agent')")
    assert "first call" in page.locator("#usage-agents").inner_text()
    page.select_option("#usage-round", "3")
    page.wait_for_selector("#usage-agents h3:has-text('Round 3 by agent')")
    shots = Path(os.environ.get("BABEL_SCREENSHOT_DIR") or ARTIFACTS)
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "usage.png"), full_page=True)
