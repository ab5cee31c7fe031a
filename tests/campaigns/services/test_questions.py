"""Turn keys and evidence-recall questions in transcripts: stored on import (evidence as
turn ids), written back by key on export byte for byte, all or nothing."""

from __future__ import annotations

import copy

import pytest
from django.core.exceptions import ValidationError

from campaigns import demo
from campaigns.models import Experiment, Question, Turn
from campaigns.services import transcripts
from campaigns.services.arena import questions_for
from context_engine.arena.generate import generate_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def generated():
    return generate_campaign(rounds=30, players=3, seed=5)


def test_a_transcript_with_keys_and_questions_round_trips_byte_identically(generated):
    text = transcripts.dumps(generated)
    first = transcripts.import_transcript(data=transcripts.loads(text))
    exported = transcripts.dumps(transcripts.export_transcript(experiment=first))
    assert exported == text
    second = transcripts.import_transcript(data=transcripts.loads(exported))
    assert transcripts.dumps(transcripts.export_transcript(experiment=second)) == exported


def test_evidence_is_stored_as_the_ids_of_the_keyed_turns(generated):
    experiment = transcripts.import_transcript(data=copy.deepcopy(generated))
    key_of = dict(Turn.objects.filter(experiment=experiment).values_list("pk", "key"))
    stored = list(experiment.questions.order_by("position"))
    assert len(stored) == len(generated["questions"])
    for question, original in zip(stored, generated["questions"], strict=True):
        assert [key_of[i] for i in question.evidence] == original["evidence"]
        assert (question.role or None) == original.get("role")
    views = questions_for(experiment=experiment)
    assert [v.evidence for v in views] == [tuple(q.evidence) for q in stored]


def test_a_transcript_without_keys_or_questions_exports_neither():
    experiment = transcripts.import_transcript(data=demo.transcript())
    data = transcripts.export_transcript(experiment=experiment)
    assert "questions" not in data
    assert not any("key" in turn for turn in data["turns"])


def _bad(generated, mutate):
    data = copy.deepcopy(generated)
    mutate(data)
    before = (Experiment.objects.count(), Turn.objects.count(), Question.objects.count())
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data=data)
    assert (Experiment.objects.count(), Turn.objects.count(), Question.objects.count()) == before
    return caught.value.message_dict


def _set(path, value):
    def mutate(data):
        target = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return mutate


@pytest.mark.parametrize(
    ("path", "value", "field", "message"),
    [
        (("questions", 3, "evidence", 0), "nope", "questions[3].evidence[0]", "No turn has"),
        (("questions", 1, "evidence"), "t1", "questions[1].evidence", "list"),
        (("questions", 0, "asked_at_round"), 31, "questions[0].asked_at_round", "0–30"),
        (("questions", 0, "asked_at_round"), -1, "questions[0].asked_at_round", "0 or more"),
        (("questions", 0, "asked_at_round"), "5", "questions[0].asked_at_round", "whole"),
        (("questions", 2, "role"), "Nobody", "questions[2].role", "participant"),
        (("questions", 2, "category"), "", "questions[2].category", "non-empty"),
        (("questions", 2, "answer"), 7, "questions[2].answer", "non-empty"),
        (("questions", 2, "question"), None, "questions[2].question", "non-empty"),
        (("questions", 2, "colour"), "red", "questions[2].colour", "Unknown field"),
        (("turns", 4, "key"), "", "turns[4].key", "1–64"),
        (("turns", 4, "key"), "k" * 65, "turns[4].key", "1–64"),
        (("turns", 4, "key"), 4, "turns[4].key", "1–64"),
        (("turns", 5, "key"), "t1", "turns[5].key", "Duplicate key."),
    ],
)
def test_a_bad_key_or_question_names_its_field_and_nothing_is_stored(
    generated, path, value, field, message
):
    errors = _bad(generated, _set(path, value))
    assert field in errors, errors
    assert message in " ".join(errors[field])


def test_a_question_naming_the_same_turn_twice_or_not_an_object_is_rejected(generated):
    twice = generated["questions"][0]["evidence"][0]
    errors = _bad(generated, _set(("questions", 0, "evidence"), [twice, twice]))
    assert errors == {"questions[0].evidence[1]": ["Duplicate key."]}
    assert "questions[1]" in _bad(generated, _set(("questions", 1), "what?"))
    assert "questions" in _bad(generated, _set(("questions",), {"question": "x"}))


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_400_naming_the_question_field(client, django_user_model, generated):
    user = django_user_model.objects.create_user("owner", password="pw")
    client.force_login(user)
    data = copy.deepcopy(generated)
    data["questions"][3]["evidence"][0] = "missing"
    response = client.post("/api/import/", data, content_type="application/json")
    assert response.status_code == 400
    assert "questions[3].evidence[0]" in response.json()
    assert not Experiment.objects.exists()
