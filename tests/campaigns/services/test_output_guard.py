"""The output guard's Django side: its sources by audience, and no false holds on the demo
or a generated 120-round campaign (`manage.py bench_guard`)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from campaigns import demo
from campaigns.services import transcripts
from campaigns.services.output_guard import guard_sweep, output_check
from campaigns.services.turns import turn_create

pytestmark = pytest.mark.django_db

WHISPER = "Meet me behind the salt warehouse when the second bell rings tonight, alone."


def test_the_demo_and_a_generated_120_round_campaign_have_no_false_holds():
    out = StringIO()
    call_command("bench_guard", "--rounds", "120", "--checkpoint", stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines[1:]] == ["demo", "generated (120 rounds, seed 1)"]
    assert all(", 0 hold(s)" in line for line in lines[1:]), lines


def test_the_sweep_finds_a_planted_leak_in_the_demo():
    experiment = transcripts.import_transcript(data=demo.transcript())
    note = experiment.turns.filter(kind="gm_note").first()
    leak = turn_create(
        experiment=experiment, speaker="Wren", kind="action", content=f"Wren: {note.content}"
    )
    report = guard_sweep(experiment=experiment)
    assert [seq for seq, _ in report.holds] == [leak.seq]


def test_a_whisper_is_a_source_only_for_readers_who_cannot_read_it(campaign):
    turn_create(
        experiment=campaign,
        speaker="Thorin",
        kind="whisper",
        content=WHISPER,
        visibility=["Thorin", "DM"],
    )
    quoting = f"I heard: {WHISPER}"
    # To the table: Cassia never read it.
    assert output_check(experiment=campaign, speaker="DM", visibility=None, text=quoting).held
    # Back to Thorin alone: it tells him nothing he cannot read.
    assert not output_check(
        experiment=campaign, speaker="DM", visibility=["DM", "Thorin"], text=quoting
    ).held
    # The speaker's own words are theirs to repeat; a monologue is for the speaker alone.
    assert not output_check(
        experiment=campaign, speaker="Thorin", visibility=None, text=quoting
    ).held
    assert not output_check(
        experiment=campaign, speaker="Cassia", visibility=["Cassia"], text=quoting
    ).held


def test_a_held_verdict_names_who_reviews_it(campaign):
    turn_create(experiment=campaign, speaker="Cassia", kind="monologue", content=WHISPER)
    verdict = output_check(
        experiment=campaign, speaker="DM", visibility=None, text=f"Lo: {WHISPER}"
    )
    # The DM cannot read Cassia's monologue: only the owner reviews (stored as the speaker's).
    assert verdict.held and verdict.review == ("DM",)
    assert verdict.records[0]["audience"] == ["Cassia"]
