"""`convert_locomo` turns a LoCoMo conversation into a transcript with keyed turns and questions.

The LoCoMo-shaped input below is written for the test (invented lines, not the dataset's).
Importing the output waits for the format's `key`/`questions` fields, so these tests check
the converter's output shape only.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from campaigns.services.locomo import (
    LoCoMoError,
    locomo_conversation,
    locomo_to_transcript,
)

SAMPLE = {
    "sample_id": "conv-test",
    "qa": [
        {
            "question": "Where did Ada move from?",
            "answer": "Lisbon",
            "evidence": ["D1:2"],
            "category": 4,
        },
        {"question": "How many dogs?", "answer": 2, "evidence": ["D2:1", "D9:9"], "category": 1},
        {"question": "What did Ada say?", "answer": "Hi", "evidence": ["D1:2 D1:1"], "category": 1},
        {
            "question": "What did Ada lose?",
            "evidence": ["D1:2"],
            "category": 5,
            "adversarial_answer": "x",
        },
        {"question": "Would Bo move?", "answer": "No", "evidence": [], "category": 3},
    ],
    "conversation": {
        "speaker_a": "Ada",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Bo", "dia_id": "D1:1", "text": "Hi Ada!"},
            {
                "speaker": "Ada",
                "dia_id": "D1:2",
                "text": "I moved from Lisbon.",
                "blip_caption": "a photo of a tram",
            },
        ],
        "session_2_date_time": "9:00 am on 1 June, 2023",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "We got a second dog."}],
        "session_3_date_time": "10:00 am on 2 June, 2023",
    },
}


def test_each_session_is_a_round_opened_by_the_dm_with_its_date():
    data = locomo_to_transcript(SAMPLE)
    assert [(t["round"], t["speaker"], t["kind"], t["key"]) for t in data["turns"]] == [
        (1, "DM", "narrative", "S1"),
        (1, "Bo", "action", "D1:1"),
        (1, "Ada", "action", "D1:2"),
        (2, "DM", "narrative", "S2"),
        (2, "Bo", "action", "D2:1"),
    ]
    assert data["turns"][0]["content"] == "Session 1 — 1:56 pm on 8 May, 2023"
    assert all(t["visibility"] is None for t in data["turns"])
    assert [(p["role"], p["kind"]) for p in data["participants"]] == [
        ("DM", "dm"),
        ("Ada", "player"),
        ("Bo", "player"),
    ]
    assert data["experiment"]["name"] == "LoCoMo conv-test"


def test_a_shared_photo_adds_its_caption_to_the_line():
    turn = locomo_to_transcript(SAMPLE)["turns"][2]
    assert turn["content"] == "I moved from Lisbon. [shares a photo: a photo of a tram]"


def test_questions_keep_existing_evidence_and_drop_unanswerable_ones():
    questions = locomo_to_transcript(SAMPLE)["questions"]
    assert questions == [
        {
            "question": "Where did Ada move from?",
            "answer": "Lisbon",
            "evidence": ["D1:2"],
            "category": "single-hop",
            "asked_at_round": 2,
        },
        {
            "question": "How many dogs?",
            "answer": "2",
            "evidence": ["D2:1"],
            "category": "multi-hop",
            "asked_at_round": 2,
        },
        {  # one evidence string naming two lines, as a few of LoCoMo's do
            "question": "What did Ada say?",
            "answer": "Hi",
            "evidence": ["D1:2", "D1:1"],
            "category": "multi-hop",
            "asked_at_round": 2,
        },
    ]


def test_hand_labelled_questions_replace_the_qa_and_may_point_at_the_date_line():
    labels = [
        {
            "question": "When did Bo get a second dog?",
            "answer": "1 June 2023",
            "evidence": ["S2", "D2:1"],
            "category": "when",
            "role": "Ada",
        },
    ]
    questions = locomo_to_transcript(SAMPLE, questions=labels)["questions"]
    assert questions == [{**labels[0], "asked_at_round": 2}]


@pytest.mark.parametrize(
    ("labels", "field"),
    [
        (
            [{"question": "q", "answer": "a", "evidence": ["D7:1"], "category": "single"}],
            "questions[0].evidence",
        ),
        (
            [{"question": "q", "answer": "a", "evidence": [], "category": "single"}],
            "questions[0].evidence",
        ),
        (
            [{"question": "", "answer": "a", "evidence": ["D1:1"], "category": "single"}],
            "questions[0].question",
        ),
        (
            [
                {
                    "question": "q",
                    "answer": "a",
                    "evidence": ["D1:1"],
                    "category": "single",
                    "role": "Cy",
                }
            ],
            "questions[0].role",
        ),
        (
            [
                {
                    "question": "q",
                    "answer": "a",
                    "evidence": ["D1:1"],
                    "category": "single",
                    "asked_at_round": "2",
                }
            ],
            "questions[0].asked_at_round",
        ),
        ([], "questions"),
    ],
)
def test_bad_hand_labels_name_the_field(labels, field):
    with pytest.raises(LoCoMoError, match="^" + re.escape(field) + ":"):
        locomo_to_transcript(SAMPLE, questions=labels)


def _broken(path, value):
    sample = copy.deepcopy(SAMPLE)
    target = sample
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return sample


@pytest.mark.parametrize(
    ("sample", "field"),
    [
        (
            _broken(("conversation", "session_1", 0, "speaker"), "Cy"),
            r"conversation\.session_1\[0\]\.speaker",
        ),
        (_broken(("conversation", "session_2", 0, "dia_id"), "D1:1"), "dia_id"),
        (
            _broken(("conversation", "session_2", 0, "text"), ""),
            r"conversation\.session_2\[0\]\.text",
        ),
        (
            _broken(("conversation", "session_2_date_time"), None),
            r"conversation\.session_2_date_time",
        ),
        (_broken(("conversation", "session_2"), []), r"conversation\.session_2"),
        (_broken(("conversation", "speaker_b"), None), r"conversation\.speaker_b"),
        (_broken(("qa", 0, "category"), 9), r"qa\[0\]\.category"),
        (_broken(("qa", 1, "evidence"), "D2:1"), r"qa\[1\]\.evidence"),
    ],
)
def test_bad_input_names_the_element(sample, field):
    with pytest.raises(LoCoMoError, match=rf"^{field}:"):
        locomo_to_transcript(sample)


def test_a_conversation_is_chosen_by_its_number_from_one():
    assert locomo_conversation([SAMPLE], 1) is SAMPLE
    with pytest.raises(LoCoMoError, match=r"^\[2\]: no such conversation \(the file has 1\)"):
        locomo_conversation([SAMPLE], 2)


def test_the_command_writes_one_conversation_with_hand_labelled_questions(tmp_path):
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps([SAMPLE]))
    labels = tmp_path / "labels.json"
    labels.write_text(
        json.dumps(
            {
                "source": "test",
                "questions": [
                    {
                        "question": "Who moved?",
                        "answer": "Ada",
                        "evidence": ["D1:2"],
                        "category": "single",
                    },
                ],
            }
        )
    )
    out = tmp_path / "out.json"
    call_command(
        "convert_locomo",
        str(source),
        "--conversation",
        "1",
        "--out",
        str(out),
        "--questions",
        str(labels),
    )
    written = json.loads(out.read_text())
    assert [t["key"] for t in written["turns"]] == ["S1", "D1:1", "D1:2", "S2", "D2:1"]
    assert written["questions"][0]["evidence"] == ["D1:2"]


def test_the_command_writes_every_conversation_with_all(tmp_path):
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps([SAMPLE, SAMPLE]))
    call_command("convert_locomo", str(source), "--all", "--out", str(tmp_path / "out"))
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["locomo_conversation_1.json", "locomo_conversation_2.json"]


def test_the_command_reports_bad_input_as_a_command_error(tmp_path):
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps([SAMPLE]))
    with pytest.raises(CommandError, match="no such conversation"):
        call_command(
            "convert_locomo", str(source), "--conversation", "3", "--out", str(tmp_path / "o")
        )
    with pytest.raises(CommandError, match="use --conversation"):
        call_command(
            "convert_locomo",
            str(source),
            "--all",
            "--out",
            str(tmp_path / "o"),
            "--questions",
            str(source),
        )
