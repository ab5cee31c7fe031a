"""Planted facts in transcripts: stored on import, written back on export, all or nothing."""

from __future__ import annotations

import copy

import pytest
from django.core.exceptions import ValidationError

from campaigns import demo
from campaigns.models import Experiment, Fact
from campaigns.services import transcripts
from context_engine.arena.generate import generate_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def generated():
    return generate_campaign(rounds=30, players=3, seed=5)


def test_a_transcript_with_facts_round_trips_byte_identically(generated):
    first = transcripts.import_transcript(data=copy.deepcopy(generated))
    assert first.facts.count() == len(generated["facts"])
    exported = transcripts.dumps(transcripts.export_transcript(experiment=first))
    second = transcripts.import_transcript(data=transcripts.loads(exported))
    again = transcripts.dumps(transcripts.export_transcript(experiment=second))
    assert again == exported
    assert transcripts.loads(exported)["facts"] == generated["facts"]


def test_a_transcript_without_facts_still_round_trips_without_the_key():
    first = transcripts.import_transcript(data=demo.transcript())
    data = transcripts.export_transcript(experiment=first)
    assert "facts" not in data
    exported = transcripts.dumps(data)
    second = transcripts.import_transcript(data=transcripts.loads(exported))
    assert transcripts.dumps(transcripts.export_transcript(experiment=second)) == exported


def test_facts_keep_the_file_order_and_every_field(generated):
    experiment = transcripts.import_transcript(data=copy.deepcopy(generated))
    stored = list(experiment.facts.order_by("position"))
    for fact, original in zip(stored, generated["facts"], strict=True):
        assert (fact.key, fact.round, fact.audience, fact.answer, fact.question) == (
            original["id"],
            original["round"],
            original["audience"],
            original["answer"],
            original["question"],
        )


@pytest.mark.parametrize(
    ("index", "change", "field"),
    [
        (2, {"answer": []}, "facts[2].answer"),
        (2, {"answer": ["ok", 7]}, "facts[2].answer"),
        (1, {"audience": ["Nobody"]}, "facts[1].audience"),
        (1, {"audience": []}, "facts[1].audience"),
        (0, {"round": -1}, "facts[0].round"),
        (0, {"round": True}, "facts[0].round"),
        (0, {"id": ""}, "facts[0].id"),
        (0, {"question": None}, "facts[0].question"),
        (0, {"colour": "red"}, "facts[0].colour"),
    ],
)
def test_a_bad_fact_names_its_field_and_nothing_is_stored(generated, index, change, field):
    data = copy.deepcopy(generated)
    data["facts"][index].update(change)
    before = (Experiment.objects.count(), Fact.objects.count())
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data=data)
    assert field in caught.value.message_dict
    assert (Experiment.objects.count(), Fact.objects.count()) == before


def test_duplicate_fact_ids_and_a_missing_audience_are_rejected(generated):
    data = copy.deepcopy(generated)
    data["facts"][3]["id"] = data["facts"][0]["id"]
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data=data)
    assert "facts[3].id" in caught.value.message_dict
    data = copy.deepcopy(generated)
    del data["facts"][1]["audience"]
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data=data)
    assert "facts[1].audience" in caught.value.message_dict
    data = copy.deepcopy(generated)
    data["facts"] = {"id": "x"}
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data=data)
    assert "facts" in caught.value.message_dict
