"""A player's pages in a real browser do not depend on what they cannot read (issue 23
ask 5). Two copies of the demo differ only in what Thorin cannot read — a GM note, a
whisper between the DM and Cassia, Wren's monologue and a DM-only World Bible entry —
then both get the same public narration and a /checkpoint. Thorin's timeline, whispers,
World Bible, memory and context pages read the same, as rendered text, in both."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from campaigns import demo
from campaigns.management.commands.seed_demo import DEMO_PASSWORD
from campaigns.models import Participant
from campaigns.services import transcripts
from campaigns.services.lore import lore_create
from campaigns.services.memory.commands import run_command
from campaigns.services.notes import note_create
from campaigns.services.turns import turn_create
from tests.e2e.test_console import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

PAGES = ("", "whispers/", "lore/", "memory/", "context/Thorin/")
HIDDEN = "Quillfeather vaults beneath the Ashen Stair"


def _campaign(owner, thorin, *, hidden: bool):
    experiment = transcripts.import_transcript(data=demo.transcript(), owner=owner)
    Participant.objects.filter(experiment=experiment, role="Thorin").update(user=thorin)
    round_now = experiment.current_round
    if hidden:
        note_create(
            experiment=experiment, user=owner, speaker="DM", round=round_now, content=HIDDEN
        )
        for speaker, kind, visibility in (
            ("DM", "whisper", ["Cassia", "DM"]),
            ("Wren", "monologue", ["Wren"]),
        ):
            turn_create(
                experiment=experiment,
                round=round_now,
                speaker=speaker,
                kind=kind,
                content=f"{HIDDEN}, says {speaker}.",
                visibility=visibility,
            )
        lore_create(
            experiment=experiment,
            user=owner,
            term="Quillfeather",
            category="location",
            definition=f"{HIDDEN}.",
            audience=["DM"],
        )
    turn_create(
        experiment=experiment,
        round=round_now,
        speaker="DM",
        kind="narrative",
        content="The tide turns; lanterns gutter along the quay.",
    )
    run_command(experiment=experiment, command="checkpoint", user=owner)
    return experiment


def _read(page, base: str) -> dict[str, str]:
    seen = {}
    for path in PAGES:
        page.goto(base + path)
        page.wait_for_load_state("networkidle")
        seen[path] = page.locator("main").inner_text()
    return seen


def test_what_a_player_reads_is_the_same_with_and_without_hidden_additions(browser, live_server):
    users = get_user_model().objects
    owner = users.create_user("owner", password="x-owner-pass")
    thorin = users.create_user("thorin", password=DEMO_PASSWORD)
    plain = _campaign(owner, thorin, hidden=False)
    with_hidden = _campaign(owner, thorin, hidden=True)
    page = browser.new_context().new_page()
    sign_in(page, live_server, "thorin")

    seen_plain = _read(page, f"{live_server.url}/campaigns/{plain.pk}/")
    seen_hidden = _read(page, f"{live_server.url}/campaigns/{with_hidden.pk}/")

    for path in PAGES:
        assert "Quillfeather" not in seen_hidden[path]
        assert seen_hidden[path] == seen_plain[path], f"/{path} differs for Thorin"
