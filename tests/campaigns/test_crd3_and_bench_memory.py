"""`convert_crd3` turns a CRD3 episode into an importable transcript, and
`bench_memory --transcript/--labels` measures any transcript without keeping anything.

The CRD3-shaped input below is written for the test (invented lines, not the dataset's).
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from campaigns.models import Experiment, LoreEntry, Turn
from campaigns.services import transcripts
from campaigns.services.crd3 import CRD3Error, crd3_to_transcript, crd3_turns


def _turn(number, names, *lines):
    return {"NAMES": list(names), "UTTERANCES": list(lines), "NUMBER": number}


# Aligned-data shape: overlapping chunks, so turn 2 appears twice.
EPISODE = [
    {
        "CHUNK": "",
        "TURNS": [
            _turn(0, ["MATT"], "You arrive at the gates of Duskharrow.", "Rain is falling."),
            _turn(1, ["JUNO"], "I knock on the gate."),
            _turn(2, ["MATT"], "A guard named Pell opens the hatch."),
        ],
    },
    {
        "CHUNK": "",
        "TURNS": [
            _turn(2, ["MATT"], "A guard named Pell opens the hatch."),
            _turn(3, ["JUNO", "RIK"], "Hello, Pell!"),
            _turn(4, ["ALL"], "(laughter)"),
            _turn(5, ["MATT"], "Pell waves you into Duskharrow."),
        ],
    },
]


def test_turns_are_deduplicated_by_number_and_lines_joined():
    rows = crd3_turns(EPISODE)
    assert [number for number, _, _ in rows] == [0, 1, 2, 3, 4, 5]
    assert rows[0][2] == "You arrive at the gates of Duskharrow. Rain is falling."
    assert rows[3][1] == "JUNO"  # several names: the turn is the first one's


def test_the_dm_becomes_dm_players_keep_their_names_and_rounds_start_at_dm_turns():
    data = crd3_to_transcript(EPISODE, name="Pilot", turns_per_round=2)
    assert [p["role"] for p in data["participants"]] == ["DM", "Juno", "All"]
    assert [p["kind"] for p in data["participants"]] == ["dm", "player", "player"]
    assert [(t["speaker"], t["round"]) for t in data["turns"]] == [
        ("DM", 1),
        ("Juno", 1),
        ("DM", 2),
        ("Juno", 2),
        ("All", 2),
        ("DM", 3),
    ]
    assert all(t["visibility"] is None for t in data["turns"])
    assert {t["kind"] for t in data["turns"]} == {"narrative", "action"}


def test_the_cleaned_data_shape_is_accepted_too():
    data = crd3_to_transcript({"TURNS": EPISODE[0]["TURNS"]})
    assert len(data["turns"]) == 3


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"nothing": []}, "TURNS"),
        ([{"TURNS": [{"NAMES": ["MATT"], "UTTERANCES": ["x"], "NUMBER": "1"}]}], "NUMBER"),
        ([{"TURNS": [{"NAMES": [], "UTTERANCES": ["x"], "NUMBER": 1}]}], "NAMES"),
        ([{"TURNS": [{"NAMES": ["MATT"], "UTTERANCES": "x", "NUMBER": 1}]}], "UTTERANCES"),
    ],
)
def test_a_malformed_episode_is_refused_naming_the_field(bad, field):
    with pytest.raises(CRD3Error, match=field):
        crd3_to_transcript(bad)


@pytest.mark.django_db
def test_the_converted_episode_imports(tmp_path):
    source = tmp_path / "episode.json"
    source.write_text(json.dumps(EPISODE))
    out = tmp_path / "transcript.json"
    call_command("convert_crd3", str(source), output=str(out), stderr=StringIO())
    experiment = transcripts.import_transcript(data=transcripts.loads(out.read_text()))
    assert experiment.turns.count() == 6
    assert experiment.name == "episode"


def test_convert_crd3_names_a_missing_file():
    with pytest.raises(CommandError, match="No such file"):
        call_command("convert_crd3", "/nonexistent/episode.json")


@pytest.mark.django_db
def test_bench_memory_on_a_transcript_prints_proposals_junk_share_and_keeps_nothing(tmp_path):
    source = tmp_path / "episode.json"
    source.write_text(json.dumps(EPISODE))
    transcript = tmp_path / "transcript.json"
    call_command("convert_crd3", str(source), output=str(transcript), stderr=StringIO())
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"Duskharrow": "keep", "Pell": "keep", "Rain": "junk"}))
    out = StringIO()
    call_command("bench_memory", transcript=str(transcript), labels=str(labels), stdout=out)
    text = out.getvalue()
    assert "6 turns" in text and "/checkpoint" in text and "ratio" in text
    assert "Duskharrow" in text and "Pell" in text
    assert "junk 0/2 = 0%" in text
    assert "recall of terms labelled keep: 2/2" in text
    assert Experiment.objects.count() == 0 and Turn.objects.count() == 0
    assert LoreEntry.objects.count() == 0


@pytest.mark.django_db
def test_bench_memory_refuses_labels_that_are_not_keep_or_junk(tmp_path):
    transcript = tmp_path / "t.json"
    transcript.write_text(transcripts.dumps(crd3_to_transcript(EPISODE)))
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"Pell": "maybe"}))
    with pytest.raises(CommandError, match="keep"):
        call_command("bench_memory", transcript=str(transcript), labels=str(labels))
    with pytest.raises(CommandError, match="--labels needs --transcript"):
        call_command("bench_memory", labels=str(labels))
