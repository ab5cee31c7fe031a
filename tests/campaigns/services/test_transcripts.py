"""Transcript import/export: lossless round trip, and a bad file stores nothing."""

import copy

import pytest
from django.core.exceptions import ValidationError

from campaigns import demo
from campaigns.models import Experiment, LoreEntry, Participant, Turn
from campaigns.services import transcripts

pytestmark = pytest.mark.django_db


def _counts():
    return (
        Experiment.objects.count(),
        Participant.objects.count(),
        Turn.objects.count(),
        LoreEntry.objects.count(),
    )


def test_export_import_export_is_byte_identical():
    first = transcripts.import_transcript(data=demo.transcript())
    exported = transcripts.dumps(transcripts.export_transcript(experiment=first))
    second = transcripts.import_transcript(data=transcripts.loads(exported))
    assert second.pk != first.pk
    assert transcripts.dumps(transcripts.export_transcript(experiment=second)) == exported


def test_import_keeps_order_rounds_speakers_kinds_visibility_tags_and_hinges():
    source = demo.transcript()
    experiment = transcripts.import_transcript(data=source)
    stored = list(experiment.turns.order_by("seq"))
    assert [t.seq for t in stored] == list(range(1, len(source["turns"]) + 1))
    for turn, original in zip(stored, source["turns"], strict=True):
        assert (turn.round, turn.speaker, turn.kind, turn.content) == (
            original["round"],
            original["speaker"],
            original["kind"],
            original["content"],
        )
        assert turn.visibility == (
            sorted(original["visibility"]) if original["visibility"] else None
        )
        assert turn.tags == original["tags"]
        assert turn.hinge is original["hinge"]
    cassia = experiment.participants.get(role="Cassia")
    assert "Quiet Ledger" in cassia.secret
    entry = experiment.lore.get(term="tide-script")
    assert entry.locked and entry.origin == "dm"
    assert [t.seq for t in entry.source_turns.all()] == [3]


def _bad(path, value):
    data = copy.deepcopy(demo.transcript())
    target = data
    *parents, last = path
    for key in parents:
        target = target[key]
    target[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("turns", 5, "visibility"), ["Gandalf"], "turns[5].visibility"),
        (("turns", 7, "visibility"), "Thorin", "turns[7].visibility"),
        (("turns", 3, "speaker"), "Nobody", "turns[3].speaker"),
        (("turns", 4, "kind"), "poem", "turns[4].kind"),
        (("turns", 6, "round"), -2, "turns[6].round"),
        (("turns", 2, "content"), "", "turns[2].content"),
        (("turns", 2, "colour"), "red", "turns[2].colour"),
        (("participants", 1, "role"), "DM", "participants[1].role"),
        (("participants", 2, "kind"), "wizard", "participants[2].kind"),
        (("lore", 0, "audience"), ["Ghost"], "lore[0].audience"),
        (("lore", 0, "source_turns"), [999], "lore[0].source_turns"),
        (("experiment", "config"), {"strategy": "vibes"}, "experiment.config.strategy"),
    ],
)
def test_a_bad_file_stores_nothing_and_names_the_element_and_field(path, value, field):
    before = _counts()
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data=_bad(path, value))
    assert field in caught.value.message_dict
    assert _counts() == before


def test_a_bad_turn_is_reported_before_bad_lore_and_nothing_is_stored():
    """The lore's entries are written before the turns (while their tokens are counted),
    but only once every turn has validated."""
    data = _bad(("turns", 3, "speaker"), "Nobody")
    data["lore"] = "not a list"
    before = _counts()
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data=data)
    assert list(caught.value.message_dict) == ["turns[3].speaker"]
    assert _counts() == before


def test_a_participant_named_twice_is_refused_with_its_index():
    data = copy.deepcopy(demo.transcript())
    data["participants"].append(dict(data["participants"][1], order=9))
    before = _counts()
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data=data)
    index = len(data["participants"]) - 1
    role = data["participants"][1]["role"]
    assert caught.value.message_dict == {
        f"participants[{index}].role": [f"Role {role!r} already exists in this experiment."]
    }
    assert _counts() == before


def test_invalid_json_is_a_validation_error_not_a_crash():
    with pytest.raises(ValidationError) as caught:
        transcripts.loads("{not json")
    assert "transcript" in caught.value.message_dict


def _search_state():
    """The term rows, the backlog rows and (SQLite) the term rows' insert trigger, which
    an import drops while it writes."""
    from django.db import connection

    from campaigns.models import SearchBacklog

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM campaigns_turn_terms")
        rows = cursor.fetchone()[0]
        trigger = None
        if connection.vendor == "sqlite":
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'turn_terms_insert'")
            trigger = cursor.fetchone()
    return rows, SearchBacklog.objects.count(), trigger


@pytest.mark.parametrize("bad_at", [0, 2345, 4999])
def test_a_bad_turn_anywhere_in_a_large_import_stores_nothing(bad_at):
    """Several chunks of turns; the bad one in the first, a middle or the last chunk."""
    source = demo.transcript()
    good = source["turns"][0]
    turns = [{**good, "content": f"Turn {i} of many."} for i in range(5000)]
    turns[bad_at] = {**good, "speaker": "Gandalf"}
    before, search_before = _counts(), _search_state()
    with pytest.raises(ValidationError) as caught:
        transcripts.import_transcript(data={**source, "turns": turns, "lore": []})
    assert list(caught.value.message_dict) == [f"turns[{bad_at}].speaker"]
    assert _counts() == before
    assert _search_state() == search_before


@pytest.mark.parametrize("helpers", [0, 1], ids=["counted-here", "helper-process"])
def test_a_large_import_stores_every_turn_with_its_token_count(settings, helpers):
    """Counted by the request alone, or by a helper process beside it
    (`BABEL_IMPORT_COUNT_PROCESSES`, `context_engine.token_pool`): the same counts."""
    from context_engine import token_pool, tokens

    settings.BABEL_IMPORT_COUNT_PROCESSES = helpers
    if helpers:
        assert token_pool.start(helpers, wait=60)
    source = demo.transcript()
    good = source["turns"][0]
    turns = [{**good, "content": f"Turn {i}: " + "word " * (i % 37)} for i in range(4500)]
    experiment = transcripts.import_transcript(data={**source, "turns": turns, "lore": []})
    stored = list(experiment.turns.order_by("seq").values_list("seq", "content", "tokens"))
    assert stored == [
        (i + 1, turn["content"], tokens.count(turn["content"])) for i, turn in enumerate(turns)
    ]


def test_awkward_characters_survive_the_bulk_write():
    """PostgreSQL's COPY text format escapes backslash, tab, newline and return."""
    source = demo.transcript()
    good = source["turns"][0]
    awkward = "tab\there, back\\slash, new\nline, return\r, \\N, \\., end\\"
    turns = [
        {
            **good,
            "content": awkward,
            "tags": ['quote"d', "back\\slash", "tab\tbed", "ünïcode ✓"],
        },
        {**good, "content": "\\.\n", "tags": []},
    ]
    experiment = transcripts.import_transcript(data={**source, "turns": turns, "lore": []})
    stored = list(experiment.turns.order_by("seq").values_list("content", "tags"))
    assert stored == [(turn["content"], turn["tags"]) for turn in turns]
